"""finish: the stop reason, the final report (Markdown + plot), `submission.json` for SOL problems and
command tasks, and in production mode the final privacy check, whose failure voids the campaign (no
submission, non-zero exit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from aka_graph.context import CampaignContext
from aka_graph.edges import stop_reason
from aka_graph.nodes._common import ctx_of, emit, ledger_of, target_of, update_live
from aka_graph.nodes.privacy_guard import VIOLATION_FILE
from aka_graph.state import CampaignState
from aka_graph.tools.records.layout import CampaignLayout
from aka_graph.tools.records.ledger import Ledger
from aka_graph.tools.records.memory import read_version_records
from aka_graph.tools.records.privacy import audit_campaign, campaign_privacy, private_dir
from aka_graph.tools.records.workspace import CampaignWorkspace

HIDDEN_FILES = ("shapes.json", "metadata.json", "roofline.json")
PRIVACY_FAILED = "privacy check failed"


def final_policy_check(ws: CampaignWorkspace, op_dir: Path) -> list[str]:
    """Production mode: no private shape id or value may appear in any git object (every branch,
    unreachable ones too), or any file of the workspace (worktrees, records, prompts, transcripts,
    report), and no hidden operator file may ever have been committed. Findings name opaque ids only."""
    problems: list[str] = []
    found = campaign_privacy(ws.root.parent, ws.root.name, Path(op_dir))
    if found is not None:
        _, scanner = found
        violation = private_dir(ws.root.parent, ws.root.name) / VIOLATION_FILE
        if violation.is_file():
            problems += json.loads(violation.read_text())["findings"]
        problems += audit_campaign(ws.root, scanner)
    files = ws.repo.git.log("--all", "--name-only", "--format=").splitlines()
    problems += [f"{name} committed" for name in HIDDEN_FILES if any(Path(f).name == name for f in files)]
    return list(dict.fromkeys(problems))


def record_privacy_outcome(ws_root: Path, ledger: Ledger, problems: list[str]) -> str | None:
    """The privacy check's verdict in the ledger and the report; a failed one voids the campaign: no
    submission. Returns why it failed (None when it passed)."""
    ledger.record_decision(
        episode=None,
        kind="final_policy",
        decision="fail" if problems else "pass",
        numbers={"problems": problems},
        message="; ".join(problems) or "clean",
    )
    report = CampaignLayout(ws_root).report_dir / "report.md"
    if problems:
        CampaignLayout(ws_root).submission.unlink(missing_ok=True)
        section = (
            f"\n## Privacy (production mode)\n\n**FAILED — {PRIVACY_FAILED}.** The campaign is void and "
            "wrote no submission:\n\n" + "".join(f"- {p}\n" for p in problems)
        )
    else:
        section = (
            "\n## Privacy (production mode)\n\nPrivacy check passed: no private shape id or shape value "
            "in any git object (every branch), file, prompt or transcript of the campaign.\n"
        )
    if report.is_file():
        report.write_text(report.read_text() + section)
    return f"{PRIVACY_FAILED}: {'; '.join(problems)}" if problems else None


def fail_campaign_on_leak(ws_root: Path, findings: list[str]) -> str:
    """A leak found mid-campaign (the commit guard): the final report, with the leak as its reason."""
    from aka_graph.tools.records.report import write_final_report

    ledger = Ledger(CampaignLayout(ws_root).ledger)
    write_final_report(ws_root, read_version_records(ws_root), ledger)
    reason = record_privacy_outcome(ws_root, ledger, findings)
    assert reason is not None
    return reason


def finish(state: CampaignState, runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    from aka_graph.tools.records.report import write_final_report

    ctx = ctx_of(runtime, state)
    ws = ctx.workspace(state.workspace_root)  # not workspace_of: a recorded leak is reported here
    target = target_of(state)
    reason = (
        state.stop_reason or stop_reason(state) or ("reference failed" if state.incumbent is None else "done")
    )
    report = write_final_report(ws.root, read_version_records(ws.root), ledger_of(ws))
    submission = None
    if target.op_format == "sol" and state.incumbent is not None:
        from aka_graph.tools.records.submission import write_submission

        submission = write_submission(ws.root, Path(target.op_dir), Path(state.incumbent.kernel_path))
    elif target.op_format == "command" and state.incumbent is not None:  # the incumbent's editable files
        from aka_graph.tasks.submission import write_task_submission

        submission = write_task_submission(ws.root, Path(target.op_dir), Path(state.incumbent.kernel_path))
    failed = None
    if target.production:
        problems = final_policy_check(ws, Path(target.op_dir))
        failed = record_privacy_outcome(ws.root, ledger_of(ws), problems)
        emit(runtime, ctx, "finish", "final_policy", ok=not problems, problems=problems)
        if failed is not None:
            submission = None
            reason = f"{reason}; {failed}"
    if submission is not None and state.incumbent is not None:  # in the campaign's git, never left untracked
        version = state.incumbent.version
        ws.commit([submission.relative_to(ws.root).as_posix()], f"submission.json for v{version}")
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
        "failed": failed,
    }
