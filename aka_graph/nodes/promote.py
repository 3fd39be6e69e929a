"""promote: apply the episode's decision. Promoted: squash the candidate (the verified trial's kernel, by
sha256) onto the campaign branch. Every outcome writes and commits `memory/vN.json`, and updates the stall
count and the Gluon lock. Re-run after a crash, it reads the written record back instead of redoing it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from aka_graph.context import CampaignContext
from aka_graph.edges import gluon_locked_after, next_stalls
from aka_graph.nodes._common import (
    ctx_of,
    emit,
    freeze_kernel,
    kernel_overrides,
    ledger_of,
    load_result,
    update_live,
    workspace_of,
)
from aka_graph.state import CampaignState, Decision, Incumbent
from aka_graph.tasks.campaign import freeze_editable, promotion_overrides, task_of
from aka_graph.tools.records.memory import (
    QualityGate,
    VersionRecord,
    read_version_records,
    version_path,
    write_version_record,
)


def episode_decision(state: CampaignState) -> Decision:
    """The verify/policy decision of this episode, or why there was nothing to verify."""
    last = state.last_decision
    if last is not None and last.episode == state.episode:
        return last
    statuses = sorted({t.status for t in state.trials}) or ["no trial"]
    impure = next((t.message for t in state.trials if t.status == "IMPURE"), "")
    return Decision(
        episode=state.episode,
        version=state.next_version,
        outcome="no_candidate",
        reason=f"no trial passed correctness (trial statuses: {', '.join(statuses)})"
        + (f"; {impure}" if impure else ""),
        incumbent_sha256=state.incumbent.sha256 if state.incumbent else None,
        framework=state.episode_framework,
    )


def memory_decision(state: CampaignState, decision: Decision) -> str:
    if decision.outcome in ("promoted", "rejected", "policy_rejected", "no_candidate"):
        if decision.outcome != "no_candidate":
            return decision.outcome
        statuses = {t.status for t in state.trials}
        if statuses and statuses <= {"FORBIDDEN_EDIT"}:
            return "forbidden_edit"
        if statuses and "IMPURE" in statuses and statuses <= {"IMPURE", "FORBIDDEN_EDIT"}:
            return "policy_rejected"  # not a kernel of the episode's framework (implement's purity gate)
        if statuses & {"INCORRECT", "COMPILE_ERROR", "RUNTIME_ERROR", "TIMEOUT", "REWARD_HACK"}:
            return "incorrect"
        if statuses and statuses <= {"INFRA_ERROR"}:
            return "infra_error"
        return "no_candidate"
    return "rejected"


def verdict_numbers(path: Path, decision: Decision) -> dict[str, Any]:
    """The decision plus, when verification ran, every number it was based on (ratios, t, p, guard)."""
    numbers = (
        json.loads(path.read_text()).get("numbers", {})
        if path.is_file() and decision.outcome in ("promoted", "rejected", "incomparable")
        else {}
    )
    return {**decision.model_dump(), "numbers": numbers}


def promote(state: CampaignState, runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    ctx = ctx_of(runtime, state)
    ws = workspace_of(ctx, state)
    version, episode = state.next_version, state.episode
    decision = episode_decision(state)
    frozen = ws.layout.frozen_version(version)
    candidate = state.candidate
    promoted = decision.outcome == "promoted" and candidate is not None
    task = task_of(state.target)
    message = f"v{version} (episode {episode}): {decision.outcome} — {decision.reason}"[:500]
    if not version_path(ws.root, version).is_file():
        update_live(ws, state, "promote", message)
        commit = ws.head_sha()
        if promoted:
            commit = ws.squash_promote(
                episode,
                f"v{version}: promote episode {episode} trial {candidate.trial}",
                overrides=promotion_overrides(task, Path(candidate.kernel_dir)) if task else
                kernel_overrides(ws.editable_files, Path(candidate.kernel_dir), state.episode_framework),
            )
            if task is not None:
                freeze_editable(task, Path(candidate.kernel_dir), frozen)
            else:
                freeze_kernel(Path(candidate.kernel_dir), frozen, state.episode_framework)
        experiments = [
            f"trial {t.trial}: {t.status} objective={t.objective} sha={(t.sha256 or '')[:12]} "
            f"{t.message[:200]}".rstrip()
            for t in state.trials
        ]
        fields: dict[str, Any] = dict(
            episode=episode,
            mode=state.episode_kind,
            framework=state.episode_framework,
            commit=commit if promoted else None,
            reason=decision.reason,
            verdict=verdict_numbers(ws.layout.verdict(episode), decision),
            experiments=experiments,
            quality_gate=QualityGate(
                passed=state.policy_ok is not False,
                checks={"policy_review": bool(state.policy_ok)} if state.policy_ok is not None else {},
            ),
        )
        kind = memory_decision(state, decision)
        if candidate is not None and candidate.result_path:
            record = VersionRecord.from_evaluation(
                version, "episode", load_result(Path(candidate.result_path)), decision=kind, **fields
            )
        else:
            record = VersionRecord(version=version, kind="episode", decision=kind, **fields)
        write_version_record(ws.root, version, record)
    record = next(r for r in read_version_records(ws.root) if r.version == version)
    ws.commit([f"memory/v{version}.json"], message)
    ledger_of(ws).record_decision(
        episode=episode,
        kind="promote",
        decision=record.decision,
        numbers=decision.model_dump(),
        incumbent_sha256=decision.incumbent_sha256,
        candidate_sha256=decision.candidate_sha256,
        message=decision.reason,
    )
    incumbent = state.incumbent
    if record.decision == "promoted" and candidate is not None:
        incumbent = Incumbent(
            version=version,
            kernel_path=str(frozen),
            sha256=candidate.sha256 or "",
            objective=candidate.objective,
            utilization_pct=candidate.utilization_pct,
            timing_method=candidate.timing_method,
            commit=record.commit or "",
            framework=state.episode_framework,
        )
    ws.remove_episode(episode)
    emit(
        runtime,
        ctx,
        "promote",
        "recorded",
        episode=episode,
        version=version,
        outcome=decision.outcome,
        reason=decision.reason,
        incumbent_objective=incumbent.objective if incumbent else None,
    )
    return {
        "incumbent": incumbent,
        "next_version": version + 1,
        "last_decision": decision,
        "stalls": next_stalls(state.stalls, decision.outcome),
        "gluon_locked": gluon_locked_after(state, decision.outcome),
        "converting": False,
    }
