"""abba: verify the episode's candidate against the incumbent in ONE comparison call (one GPU allocation,
interleaved): fast episodes `AB` x repeats, full episodes `ABBA` x `--verify-repeats`; then the verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from aka_graph.context import CampaignContext
from aka_graph.nodes._common import (
    ctx_of,
    emit,
    environment_block,
    evaluator_of,
    ledger_of,
    save_json,
    save_result,
    target_of,
    update_live,
    workspace_of,
)
from aka_graph.nodes.eval_timeout import verification_timeout_s
from aka_graph.state import CampaignState, Decision
from aka_graph.tools.records.verdict import decide


def abba(state: CampaignState, runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    ctx = ctx_of(runtime, state)
    config = state.config
    ws = workspace_of(ctx, state)
    ledger = ledger_of(ws)
    incumbent, candidate = state.incumbent, state.candidate
    assert incumbent is not None and candidate is not None, "abba needs an incumbent and a candidate"
    pattern = "AB" if state.episode_kind == "fast" else "ABBA"
    repeats = max(2, config.verify_repeats) if state.episode_kind == "fast" else config.verify_repeats
    results_dir = ws.layout.verify_dir(state.episode)
    update_live(ws, state, "abba", f"verifying v{incumbent.version} vs trial {candidate.trial} ({pattern})")
    emit(runtime, ctx, "abba", "verify_started", episode=state.episode, pattern=pattern, repeats=repeats)
    op_dir = Path(target_of(state).op_dir)
    comparison = evaluator_of(ctx, state).compare(  # masked in production: opaque ids, no job text
        ctx.sandbox,
        op_dir,
        {"A": Path(incumbent.kernel_path), "B": Path(candidate.kernel_dir)},
        results_dir,
        pattern=pattern,
        repeats=repeats,
        seeds=config.seeds,
        timeout_s=verification_timeout_s(config, op_dir),
        gpu_index=None,  # the context's sandbox holds the GPU (infrastructure: may change on a resume)
        device=config.device,
    )
    if comparison.status == "INFRA_ERROR":
        block = environment_block(state, "abba", comparison.message)
        if block is not None:
            emit(runtime, ctx, "abba", "environment_failure", diagnostic=comparison.message[-300:])
            return {"blocked": block}
    save_json(comparison.model_dump(mode="json", by_alias=True), ws.layout.comparison(state.episode))
    for label, role in (("A", "verify_incumbent"), ("B", "verify_candidate")):
        if label in comparison.kernels:
            result = comparison.kernels[label]
            path = save_result(result, results_dir / f"{label}.json")
            ledger.record(
                result,
                episode=state.episode,
                trial=candidate.trial,
                role=role,
                kernel_path=Path(incumbent.kernel_path if label == "A" else candidate.kernel_dir)
                / "kernel.py",
                result_path=path,
            )
    verified_sha = comparison.kernels["B"].kernel_sha256 if "B" in comparison.kernels else None
    numbers: dict[str, Any] = {"pattern": pattern, "repeats": repeats, "status": comparison.status}
    if comparison.status != "PASS":
        outcome, reason = "rejected", f"verification failed correctness or ran badly: {comparison.message}"
    elif verified_sha and candidate.sha256 and verified_sha != candidate.sha256:
        outcome, reason = (
            "incomparable",
            f"verified kernel {verified_sha[:12]} is not trial {candidate.sha256[:12]}",
        )
    else:
        methods = {label: r.timing_method for label, r in comparison.kernels.items()}
        methods["comparison"] = comparison.timing_method
        verdict = decide(
            comparison.rounds,
            incumbent="A",
            candidate="B",
            timing_methods=methods,
            min_improvement_pct=config.min_improvement_pct,
            regression_guard_pct=config.regression_guard_pct,
            mode="parity" if state.converting else "improve",
            parity_pct=config.conversion_parity_pct,
        )
        numbers.update(verdict.model_dump())
        outcome = (
            "promoted"
            if verdict.promote
            else ("incomparable" if verdict.reason.startswith("refused") else "rejected")
        )
        reason = verdict.reason
    decision = Decision(
        episode=state.episode,
        version=state.next_version,
        outcome=outcome,
        reason=reason,
        improvement_pct=numbers.get("improvement_pct"),
        p_value=numbers.get("p_value"),
        worst_shape_regression_pct=numbers.get("worst_shape_regression_pct"),
        candidate_sha256=candidate.sha256,
        incumbent_sha256=incumbent.sha256,
        framework=state.episode_framework,
    )
    save_json({"decision": decision.model_dump(), "numbers": numbers}, ws.layout.verdict(state.episode))
    ledger.record_decision(
        episode=state.episode,
        kind="verify",
        decision=outcome,
        numbers=numbers,
        incumbent_sha256=incumbent.sha256,
        candidate_sha256=candidate.sha256,
        message=reason,
    )
    emit(
        runtime,
        ctx,
        "abba",
        "verdict",
        episode=state.episode,
        outcome=outcome,
        reason=reason,
        improvement_pct=numbers.get("improvement_pct"),
    )
    return {"last_decision": decision, "blocked": None}
