"""review: one fan-out branch per enabled reviewer CLI; each reads the episode plan and leaves notes.

Notes are kept outside the worktree (results/e<n>/reviews/) and merged into the state by the
`merge_reviews` reducer keyed by (episode, reviewer), so a re-run branch never duplicates one.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from aka_graph.cli_agents.base import AgentRun
from aka_graph.context import CampaignContext, context_for
from aka_graph.nodes._common import emit, ledger_of, run_agent
from aka_graph.nodes.privacy_guard import privacy_of
from aka_graph.nodes.prompts import review_prompt, v1_review_prompt
from aka_graph.state import ReviewNote, ReviewTask


def review(task: ReviewTask | dict[str, Any], runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    task = ReviewTask.model_validate(task) if isinstance(task, dict) else task
    ctx = context_for(runtime.context if runtime is not None else None, task.config)
    ws = ctx.workspace(task.workspace_root)
    worktree = ws.episode_path(task.episode)
    if task.episode == 0:  # V1 guidance: no worktree yet; each reviewer reads a private copy of op/
        worktree = ws.layout.v1_review_copy(task.reviewer)
        shutil.copytree(ws.op_dir, worktree / "op", dirs_exist_ok=True)
    notes = ws.layout.review_notes(task.episode, task.reviewer)
    notes.parent.mkdir(parents=True, exist_ok=True)
    # written inside the working directory (the only place a confined reviewer can write), kept outside
    notes_rel = f"plans/reviews/{task.reviewer}.md"
    (worktree / notes_rel).unlink(missing_ok=True)
    plan_rel = f"plans/episode_{task.episode}.md"
    run = AgentRun(
        role=f"reviewer:{task.reviewer}",
        prompt=review_prompt(task.episode, plan_rel, notes_rel)
        if task.episode
        else v1_review_prompt(task.config.framework, notes_rel),
        cwd=worktree,
        effort="medium",
        timeout_s=task.config.agent_timeout_s,
        transcript_dir=ws.layout.transcripts(task.episode) / f"review_{task.reviewer}",
        labels={"episode": str(task.episode), "reviewer": task.reviewer},
    )
    privacy = privacy_of(task.config, ws.root, Path(task.config.op_dir).resolve())
    if privacy is not None:
        run = privacy.isolate(run)
    emit(runtime, ctx, "review", "agent_started", episode=task.episode, reviewer=task.reviewer)
    results, tokens = run_agent(
        ctx,
        ctx.reviewer(task.reviewer),
        run,
        ledger_of(ws),
        episode=task.episode,
        trial=None,
        missing=lambda _: None,
        max_resumes=0,
        budget_left=task.budget_left,
    )
    last = results[-1] if results else None
    written = worktree / notes_rel
    if written.is_file():
        shutil.copyfile(written, notes)
        written.unlink()  # the implementer gets them back through copy_reviews
    else:
        notes.write_text((last.final_text if last else "") + "\n")
    note = ReviewNote(
        episode=task.episode,
        reviewer=task.reviewer,
        notes_path=str(notes),
        ok=bool(last and last.ok),
        tokens=tokens,
    )
    emit(
        runtime, ctx, "review", "agent_finished", episode=task.episode, reviewer=task.reviewer, tokens=tokens
    )
    return {
        "reviews": {f"e{task.episode}:{task.reviewer}": note},
        "tokens_spent": tokens,
        "agent_sessions": len(results),
    }
