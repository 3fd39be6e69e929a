"""finish: the stop reason, the final report (Markdown + plot), `submission.json` for SOL problems."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from aka_graph.context import CampaignContext
from aka_graph.edges import stop_reason
from aka_graph.nodes._common import ctx_of, emit, ledger_of, target_of, update_live, workspace_of
from aka_graph.state import CampaignState
from aka_graph.tools.records.memory import read_version_records
from aka_graph.tools.records.workspace import CampaignWorkspace


def final_policy_check(ws: CampaignWorkspace, op_dir: Path) -> list[str]:
    """Production mode: no private shape id or hidden file may appear anywhere in the campaign's history."""
    private = (
        list(json.loads((op_dir / "shapes.json").read_text())) if (op_dir / "shapes.json").is_file() else []
    )
    history = ws.repo.git.log("-p", "--all", "--format=%H %s")
    problems = [f"private shape id {i!r} in the git history" for i in private if i in history]
    files = ws.repo.git.log("--all", "--name-only", "--format=").splitlines()
    problems += [
        f"{name} committed"
        for name in ("shapes.json", "metadata.json", "roofline.json")
        if any(Path(f).name == name for f in files)
    ]
    return problems


def finish(state: CampaignState, runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    from aka_graph.tools.records.report import write_final_report

    ctx = ctx_of(runtime, state)
    ws = workspace_of(ctx, state)
    target = target_of(state)
    reason = (
        state.stop_reason or stop_reason(state) or ("reference failed" if state.incumbent is None else "done")
    )
    report = write_final_report(ws.root, read_version_records(ws.root), ledger_of(ws))
    submission = None
    if target.op_format == "sol" and state.incumbent is not None:
        from aka_graph.tools.records.submission import write_submission

        submission = write_submission(ws.root, Path(target.op_dir), Path(state.incumbent.kernel_path))
    if state.config.optimization_mode == "production":
        problems = final_policy_check(ws, Path(target.op_dir))
        ledger_of(ws).record_decision(
            episode=None,
            kind="final_policy",
            decision="fail" if problems else "pass",
            numbers={"problems": problems},
            message="; ".join(problems) or "clean",
        )
        emit(runtime, ctx, "finish", "final_policy", ok=not problems, problems=problems)
        if problems:
            reason = f"{reason}; FINAL POLICY CHECK FAILED: {'; '.join(problems)}"
    update_live(ws, state, "finish", f"finished: {reason}")
    emit(
        runtime,
        ctx,
        "finish",
        "finished",
        reason=reason,
        report=str(report),
        incumbent_version=state.incumbent.version if state.incumbent else None,
    )
    return {
        "stop_reason": reason,
        "report_path": str(report),
        "submission_path": str(submission) if submission else None,
    }
