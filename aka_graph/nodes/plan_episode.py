"""plan_episode: open the next episode (branch + worktree), decide fast/full and the framework (Gluon
escalation), and for full episodes let the planner write plans/episode_<n>.md."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from aka_graph.cli_agents.base import AgentResult, AgentRun
from aka_graph.context import CampaignContext
from aka_graph.edges import plan_next_episode
from aka_graph.nodes._common import (
    budget_left,
    ctx_of,
    emit,
    isolated,
    ledger_of,
    run_agent,
    update_live,
    workspace_of,
)
from aka_graph.nodes.prompts import plan_prompt
from aka_graph.state import CampaignState


def plan_episode(state: CampaignState, runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    ctx = ctx_of(runtime, state)
    config = state.config
    ws = workspace_of(ctx, state)
    plan = plan_next_episode(state)
    episode = state.episode + 1
    worktree = ws.create_episode(episode)
    if state.target.op_format == "command":  # planners and reviewers read the whole source tree
        from aka_graph.tasks.campaign import prepare_worktree

        prepare_worktree(ws.root, worktree)
    update = {
        "episode": episode,
        "episode_kind": plan.kind,
        "episode_framework": plan.framework,
        "converting": plan.converting,
        "trial": 0,
        "trials": [],
        "candidate": None,
        "policy_ok": None,
        "last_decision": None,
        "blocked": None,
    }
    preview = state.model_copy(update=update)
    update_live(ws, preview, "plan_episode", f"episode {episode} ({plan.kind}, {plan.framework})")
    emit(
        runtime,
        ctx,
        "plan_episode",
        "episode_started",
        episode=episode,
        kind=plan.kind,
        framework=plan.framework,
        converting=plan.converting,
    )
    tokens = sessions = 0
    if plan.kind == "full":
        plan_rel = f"plans/episode_{episode}.md"
        run = AgentRun(
            role="planner",
            prompt=plan_prompt(preview, episode, plan_rel),
            cwd=worktree,
            effort=config.agent_effort,
            timeout_s=config.agent_timeout_s,
            transcript_dir=ws.layout.transcripts(episode) / "plan",
            labels={"episode": str(episode), "kind": plan.kind, "framework": plan.framework},
        )
        run = isolated(state, run)

        def missing(_: AgentResult) -> str | None:
            return None if (worktree / plan_rel).is_file() else f"write the plan to {plan_rel}"

        results, tokens = run_agent(
            ctx,
            ctx.agent,
            run,
            ledger_of(ws),
            episode=episode,
            trial=None,
            missing=missing,
            max_resumes=config.handoff_resumes,
            budget_left=budget_left(state),
        )
        sessions = len(results)
        ws.snapshot_episode(episode, f"episode {episode}: plan")
    return {**update, "tokens_spent": tokens, "agent_sessions": sessions}
