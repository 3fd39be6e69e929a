"""await_environment: the sandbox failed (SSH down, GPU unhealthy) — not the candidate. Poll the health
probe every `--environment-poll-interval` seconds; once it passes, the router re-runs the interrupted step."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from aka_graph.context import CampaignContext
from aka_graph.nodes._common import ctx_of, emit, update_live, workspace_of
from aka_graph.state import CampaignState


def await_environment(state: CampaignState, runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    ctx = ctx_of(runtime, state)
    block = state.blocked
    node = block.node if block else "?"
    update_live(
        workspace_of(ctx, state),
        state,
        "await_environment",
        f"environment failed in {node}: {block.diagnostic[-200:] if block else ''}",
    )
    polls = 0
    while True:
        health = ctx.sandbox.health()
        polls += 1
        if health.healthy:
            emit(runtime, ctx, "await_environment", "recovered", resume=node, polls=polls)
            return {}
        emit(runtime, ctx, "await_environment", "waiting", resume=node, diagnostic=health.diagnostic[-200:])
        ctx.sleep(state.config.environment_poll_interval)
