"""evaluate: the campaign (not the agent) evaluates the trial's frozen kernel, records it in the ledger by
the sha256 the harness computed, and picks the episode's best passing trial from the ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from aka_graph.context import CampaignContext
from aka_graph.nodes._common import (
    ctx_of,
    emit,
    evaluate_with_settings,
    ledger_of,
    save_result,
    update_live,
    workspace_of,
)
from aka_graph.state import CampaignState, TrialRecord


def evaluate(state: CampaignState, runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    ctx = ctx_of(runtime, state)
    ws = workspace_of(ctx, state)
    ledger = ledger_of(ws)
    trials = list(state.trials)
    record = trials[-1].model_copy()
    if record.status == "PENDING":
        update_live(ws, state, "evaluate", f"episode {state.episode} trial {record.trial}: evaluating")
        kernel_dir = Path(record.kernel_dir)
        results_dir = ws.layout.evaluation_of(kernel_dir)
        result, block = evaluate_with_settings(ctx, state, "evaluate", kernel_dir, results_dir)
        if block is not None:  # not the candidate's fault: wait for the environment, then re-run
            emit(runtime, ctx, "evaluate", "environment_failure", diagnostic=result.message[-300:])
            return {"blocked": block}
        result_path = save_result(result, ws.layout.result_in(results_dir))
        ledger.record(
            result,
            episode=state.episode,
            trial=record.trial,
            role="trial",
            kernel_path=kernel_dir / "kernel.py",
            result_path=result_path,
        )
        record.sha256 = result.kernel_sha256
        record.status = result.status
        record.objective = result.summary.objective
        record.utilization_pct = result.summary.geomean_utilization_pct
        record.timing_method = result.timing_method
        record.result_path = str(result_path)
        if result.status != "PASS":
            record.message = (record.message + " " + result.message).strip()[:1000]
    trials[-1] = record
    best = ledger.best_passing(state.episode, role="trial")
    candidate: TrialRecord | None = None
    if best is not None:  # by the sha256 of what was evaluated, never by what the agent says it wrote
        candidate = next((t for t in trials if t.sha256 == best.kernel_sha256 and t.status == "PASS"), None)
    emit(
        runtime,
        ctx,
        "evaluate",
        "evaluated",
        episode=state.episode,
        trial=record.trial,
        status=record.status,
        objective=record.objective,
        best=candidate.objective if candidate else None,
    )
    return {"trials": trials, "candidate": candidate, "blocked": None}
