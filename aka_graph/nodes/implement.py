"""implement: one agent turn (with handoff resumes) in the episode's worktree, producing one trial.

The worktree is reset to the episode branch's last snapshot first, so a turn re-run after a crash starts
from exactly where the interrupted one did. Edits outside the editable files reject the trial unevaluated.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from aka_graph.cli_agents.base import AgentResult, AgentRun
from aka_graph.context import CampaignContext
from aka_graph.nodes._common import (
    budget_left,
    copy_reviews,
    ctx_of,
    emit,
    freeze_kernel,
    isolated,
    ledger_of,
    run_agent,
    update_live,
    workspace_of,
)
from aka_graph.nodes.prompts import implement_prompt
from aka_graph.state import CampaignState, TrialRecord
from aka_graph.tools.records.workspace import digest_changes


def implement(state: CampaignState, runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    ctx = ctx_of(runtime, state)
    config = state.config
    ws = workspace_of(ctx, state)
    ledger = ledger_of(ws)
    episode, trial = state.episode, state.trial + 1
    worktree = ws.create_episode(episode)
    copy_reviews(state, worktree)
    update_live(ws, state, "implement", f"episode {episode} trial {trial}: agent working", trial=trial)
    emit(runtime, ctx, "implement", "agent_started", episode=episode, trial=trial, agent=ctx.agent.name)
    before = ws.protected_digest(worktree)
    run = AgentRun(
        role="implementer",
        prompt=implement_prompt(state, trial),
        cwd=worktree,
        effort=config.agent_effort,
        timeout_s=config.agent_timeout_s,
        transcript_dir=ws.layout.transcripts(episode, trial),
        labels={
            "episode": str(episode),
            "trial": str(trial),
            "kind": state.episode_kind,
            "framework": state.episode_framework,
        },
    )
    run = isolated(state, run)  # production: the worktree is all of the campaign it can read

    def missing(_: AgentResult) -> str | None:
        return None if (worktree / "kernel.py").is_file() else "kernel.py is missing: write the kernel there"

    results, tokens = run_agent(
        ctx,
        ctx.agent,
        run,
        ledger,
        episode=episode,
        trial=trial,
        missing=missing,
        max_resumes=config.handoff_resumes,
        budget_left=budget_left(state),
    )
    tampered = digest_changes(before, ws.protected_digest(worktree))
    forbidden = sorted(set(tampered) | set(ws.candidate_diff(episode).forbidden))
    record = TrialRecord(episode=episode, trial=trial, kernel_dir="", tokens=tokens)
    last = results[-1] if results else None
    if forbidden:
        record.status, record.message = "FORBIDDEN_EDIT", f"edited protected files: {forbidden}"
        ws.create_episode(episode)  # discard the forbidden edits; the next trial starts clean
    elif last is not None and last.stopped:  # the token budget ran out mid-turn: nothing to evaluate
        record.status, record.message = "BUDGET_STOPPED", last.error
        ws.create_episode(episode)
    elif last is None or not (worktree / "kernel.py").is_file():
        record.status, record.message = "NO_KERNEL", last.error if last else "agent produced nothing"
    else:
        ws.snapshot_episode(episode, f"episode {episode} trial {trial}")
        kernel_dir = freeze_kernel(worktree, ws.layout.trial_kernel(episode, trial))
        record.kernel_dir = str(kernel_dir)
        record.message = "" if last.ok else f"agent ended badly: {last.error or last.exit_code}"
    emit(
        runtime,
        ctx,
        "implement",
        "agent_finished",
        episode=episode,
        trial=trial,
        tokens=tokens,
        status=record.status,
    )
    return {
        "trial": trial,
        "trials": [*state.trials, record],
        "tokens_spent": tokens,
        "agent_sessions": len(results),
    }
