"""implement: one agent turn (with handoff resumes) in the episode's worktree, producing one trial.

The worktree is reset to the episode branch's last snapshot first, so a turn re-run after a crash starts
from exactly where the interrupted one did. Edits outside the editable files reject the trial unevaluated,
and so does a kernel whose main work is not in the episode's framework (`frameworks.framework_purity`:
status IMPURE, recorded as policy_rejected).
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from aka_graph.cli_agents.base import AgentResult, AgentRun
from aka_graph.context import CampaignContext
from aka_graph.frameworks import entry_file, framework_purity, purity_reason
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
from aka_graph.tasks.campaign import freeze_editable, guard_for, prepare_worktree, task_of
from aka_graph.tasks.seeding import TREE_DIR
from aka_graph.tools.records.workspace import digest_changes

IMPURE = "IMPURE"  # a trial whose main work is not in the episode's framework (frameworks.py purity)


def implement(state: CampaignState, runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    ctx = ctx_of(runtime, state)
    config = state.config
    ws = workspace_of(ctx, state)
    ledger = ledger_of(ws)
    episode, trial = state.episode, state.trial + 1
    framework = state.episode_framework
    entry = entry_file(framework)  # kernel.py, or kernel.cu for CUDA (frameworks.py)
    worktree = ws.create_episode(episode)
    task = task_of(state.target)
    guard = None
    if task is not None:  # a command task: the whole tree in the worktree, its harness guarded
        prepare_worktree(ws.root, worktree)
        guard = guard_for(task, ws.root)
        harness_before = guard.snapshot(worktree / TREE_DIR)
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
        if task is not None:
            return None
        return None if (worktree / entry).is_file() else f"{entry} is missing: write the kernel there"

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
    if guard is not None:  # harness edits: reverted, recorded against the trial, not scored
        report = guard.enforce(worktree / TREE_DIR, harness_before, ws.layout.transcripts(episode, trial)
                               / "harness_guard.jsonl", episode=episode, trial=trial)
        tampered += [f"{TREE_DIR}/{p}" for p in report.paths]
    forbidden = sorted(set(tampered) | set(ws.candidate_diff(episode).forbidden))
    record = TrialRecord(episode=episode, trial=trial, kernel_dir="", tokens=tokens)
    last = results[-1] if results else None
    if forbidden:
        record.status, record.message = "FORBIDDEN_EDIT", f"edited protected files: {forbidden}"
        ws.create_episode(episode)  # discard the forbidden edits; the next trial starts clean
    elif last is not None and last.stopped:  # the token budget ran out mid-turn: nothing to evaluate
        record.status, record.message = "BUDGET_STOPPED", last.error
        ws.create_episode(episode)
    elif last is None or (task is None and not (worktree / entry).is_file()):
        record.status, record.message = "NO_KERNEL", last.error if last else "agent produced nothing"
    else:
        ws.snapshot_episode(episode, f"episode {episode} trial {trial}")
        kernel_dir = (freeze_kernel(worktree, ws.layout.trial_kernel(episode, trial), framework)
                      if task is None else
                      freeze_editable(task, worktree / TREE_DIR, ws.layout.trial_kernel(episode, trial)))
        record.kernel_dir = str(kernel_dir)
        record.message = "" if last.ok else f"agent ended badly: {last.error or last.exit_code}"
        impure = framework_purity(framework, kernel_dir) if task is None else []
        if impure:  # the static gate of every mode: not evaluated, recorded as policy_rejected by promote
            record.status, record.message = IMPURE, purity_reason(impure)[:1000]
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
