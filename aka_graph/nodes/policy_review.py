"""policy_review (production mode): every candidate that can become the incumbent must be a general
kernel. A deterministic check (only editable files changed), then an agent review of each passing trial's
diff, best first: the first that passes is the candidate verification measures; none passing rejects the
episode. (V1 gets the same review before it is pinned.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from aka_graph.context import CampaignContext
from aka_graph.nodes._common import ctx_of, emit, ledger_of, update_live, workspace_of
from aka_graph.nodes._policy import review_candidate
from aka_graph.state import CampaignState, Decision, TrialRecord


def pickable_trials(state: CampaignState) -> list[TrialRecord]:
    """The episode's passing trials in the order the campaign would pick them (best objective first),
    starting with the one evaluate picked."""
    passing = [t for t in state.trials if t.status == "PASS" and t.objective is not None and t.kernel_dir]
    ordered = sorted(passing, key=lambda t: (t.objective, t.trial))
    first = state.candidate
    rest = [t for t in ordered if first is None or t.trial != first.trial]
    return ([first] if first is not None else []) + rest


def policy_review(state: CampaignState, runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    ctx = ctx_of(runtime, state)
    ws = workspace_of(ctx, state)
    ledger = ledger_of(ws)
    incumbent, candidate = state.incumbent, state.candidate
    assert incumbent is not None and candidate is not None
    update_live(ws, state, "policy_review", f"policy review of trial {candidate.trial}")
    forbidden = ws.candidate_diff(state.episode).forbidden
    tokens = sessions = 0
    chosen: TrialRecord | None = None
    reasons: list[str] = []
    if forbidden:
        reasons.append(f"edited files outside the editable set: {forbidden}")
    else:
        for trial in pickable_trials(state):
            outcome = review_candidate(
                ctx,
                state,
                ws,
                incumbent_dir=Path(incumbent.kernel_path),
                candidate_dir=Path(trial.kernel_dir),
                sha256=trial.sha256,
                cwd=ws.episode_path(state.episode),
                episode=state.episode,
                trial=trial.trial,
                label=state.episode,
            )
            tokens, sessions = tokens + outcome.tokens, sessions + outcome.sessions
            emit(
                runtime,
                ctx,
                "policy_review",
                "policy",
                episode=state.episode,
                trial=trial.trial,
                ok=outcome.ok,
                reason=outcome.reason,
            )
            if outcome.ok:
                chosen = trial
                break
            reasons.append(f"trial {trial.trial}: {outcome.reason}")
    ok = chosen is not None
    reason = f"policy review passed (trial {chosen.trial})" if chosen else "; ".join(reasons)[:1000]
    ledger.record_decision(
        episode=state.episode,
        kind="policy",
        decision="pass" if ok else "fail",
        numbers={"forbidden": forbidden, "rejected": reasons},
        candidate_sha256=(chosen or candidate).sha256,
        message=reason,
    )
    update: dict[str, Any] = {"policy_ok": ok, "tokens_spent": tokens, "agent_sessions": sessions}
    if chosen is not None:
        update["candidate"] = chosen
    else:
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
