"""policy_review (production mode): the candidate must be a general kernel. A deterministic check (only
editable files changed) plus an agent review of the diff whose first line must be `POLICY: PASS`."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from aka_graph.cli_agents.base import AgentResult, AgentRun
from aka_graph.context import CampaignContext
from aka_graph.nodes._common import budget_left, ctx_of, emit, ledger_of, run_agent, update_live, workspace_of
from aka_graph.nodes.prompts import policy_prompt
from aka_graph.state import CampaignState, Decision


def kernel_patch(incumbent_dir: Path, candidate_dir: Path) -> str:
    old = (incumbent_dir / "kernel.py").read_text().splitlines(keepends=True)
    new = (candidate_dir / "kernel.py").read_text().splitlines(keepends=True)
    return "".join(difflib.unified_diff(old, new, "incumbent/kernel.py", "candidate/kernel.py"))


def policy_verdict(text: str) -> tuple[bool, str]:
    first = (text.strip().splitlines() or [""])[0].strip()
    if first == "POLICY: PASS":
        return True, "policy review passed"
    if first.startswith("POLICY: FAIL"):
        return False, first.removeprefix("POLICY: FAIL").strip() or "policy review failed"
    return False, f"policy reviewer gave no verdict line (got {first[:80]!r})"


def policy_review(state: CampaignState, runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    ctx = ctx_of(runtime, state)
    config = state.config
    ws = workspace_of(ctx, state)
    ledger = ledger_of(ws)
    incumbent, candidate = state.incumbent, state.candidate
    assert incumbent is not None and candidate is not None
    update_live(ws, state, "policy_review", f"policy review of trial {candidate.trial}")
    forbidden = ws.candidate_diff(state.episode).forbidden
    tokens = sessions = 0
    if forbidden:
        ok, reason = False, f"edited files outside the editable set: {forbidden}"
    else:
        worktree = ws.episode_path(state.episode)
        patch = kernel_patch(Path(incumbent.kernel_path), Path(candidate.kernel_dir))
        run = AgentRun(
            role="policy_reviewer",
            prompt=policy_prompt(state, patch),
            cwd=worktree,
            effort="medium",
            timeout_s=config.agent_timeout_s,
            transcript_dir=ws.layout.transcripts(state.episode) / "policy",
            labels={"episode": str(state.episode), "trial": str(candidate.trial)},
        )

        def missing(result: AgentResult) -> str | None:
            return (
                None
                if result.final_text.strip().startswith("POLICY:")
                else ("answer with a first line 'POLICY: PASS' or 'POLICY: FAIL <reason>'")
            )

        results, tokens = run_agent(
            ctx,
            ctx.agent,
            run,
            ledger,
            episode=state.episode,
            trial=candidate.trial,
            missing=missing,
            max_resumes=1,
            budget_left=budget_left(state),
        )
        sessions = len(results)
        ok, reason = policy_verdict(results[-1].final_text if results else "")
    ledger.record_decision(
        episode=state.episode,
        kind="policy",
        decision="pass" if ok else "fail",
        numbers={"forbidden": forbidden},
        candidate_sha256=candidate.sha256,
        message=reason,
    )
    emit(runtime, ctx, "policy_review", "policy", episode=state.episode, ok=ok, reason=reason)
    update: dict[str, Any] = {"policy_ok": ok, "tokens_spent": tokens, "agent_sessions": sessions}
    if not ok:
        update["last_decision"] = Decision(
            episode=state.episode,
            version=state.next_version,
            outcome="policy_rejected",
            reason=reason,
            candidate_sha256=candidate.sha256,
            incumbent_sha256=incumbent.sha256,
            framework=state.episode_framework,
        )
    return update
