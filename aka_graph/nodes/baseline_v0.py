"""baseline_v0: no agent. Commit the verbatim reference as `kernel.py`, evaluate it on every workload,
write `memory/v0.json` in a second commit. V0 is the first incumbent and the denominator of speedups."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from aka_graph.context import CampaignContext
from aka_graph.nodes._common import (
    ctx_of,
    emit,
    evaluate_with_settings,
    incumbent_from_record,
    ledger_of,
    save_result,
    target_of,
    update_live,
    workspace_of,
)
from aka_graph.state import CampaignState
from aka_graph.tools.records.memory import (
    VersionRecord,
    read_version_records,
    version_path,
    write_version_record,
)


def write_reference_kernel(op_dir: Path, op_format: str, dest: Path) -> None:
    """The reference wrapped as a candidate: SOL `run` returning its outputs; native `Model`."""
    dest.mkdir(parents=True, exist_ok=True)
    if op_format == "sol":
        definition = json.loads((op_dir / "definition.json").read_text())
        (dest / "kernel.py").write_text(definition["reference"].rstrip() + "\n")
        solution = {
            "name": f"{definition.get('name', 'op')}_v0_reference",
            "definition": definition.get("name"),
            "author": "aka_graph (verbatim reference)",
            "spec": {
                "languages": ["pytorch"],
                "target_hardware": [],
                "entry_point": "kernel.py::run",
                "dependencies": [],
                "destination_passing_style": False,
            },
        }
        (dest / "solution.json").write_text(json.dumps(solution, indent=2) + "\n")
    else:
        (dest / "kernel.py").write_text((op_dir / "reference.py").read_text())


def v0_record_message(record: VersionRecord) -> str:
    """The commit message of memory/v0.json, from the record alone (a resumed run commits it too)."""
    status = record.correctness.status if record.correctness else record.decision
    return f"V0 record: {status}, objective {record.objective}"


def baseline_v0(state: CampaignState, runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    ctx = ctx_of(runtime, state)
    ws = workspace_of(ctx, state)
    target = target_of(state)
    frozen = ws.layout.frozen_version(0)
    if version_path(ws.root, 0).is_file():  # finished before a crash: read back, do not redo
        record = next(r for r in read_version_records(ws.root) if r.version == 0)
        ws.commit(["memory/v0.json"], v0_record_message(record))  # a kill may have come before the commit
        incumbent = incumbent_from_record(record, frozen) if record.decision == "baseline" else None
        return {"incumbent": incumbent, "next_version": 1, "blocked": None}
    update_live(ws, state, "baseline_v0", "evaluating the reference (V0)")
    # solution.json (non destination-passing) stays with the frozen V0 only: agents' kernels default to DPS
    if target.op_format == "command":  # V0 = the unmodified tree (committed when it was seeded)
        from aka_graph.tasks.campaign import freeze_editable, task_of
        from aka_graph.tasks.seeding import TREE_DIR

        freeze_editable(task_of(target), ws.root / TREE_DIR, frozen)
        commit = ws.head_sha()
    else:
        write_reference_kernel(Path(target.op_dir), target.op_format, frozen)
        shutil.copyfile(frozen / "kernel.py", ws.layout.kernel)
        commit = ws.commit(["kernel.py"], "V0: the verbatim reference as kernel.py")
    results_dir = ws.layout.v0_evaluation
    result, block = evaluate_with_settings(ctx, state, "baseline_v0", frozen, results_dir)
    if block is not None:
        emit(runtime, ctx, "baseline_v0", "environment_failure", diagnostic=result.message[-300:])
        return {"blocked": block}
    result_path = save_result(result, ws.layout.result_in(results_dir))
    ledger_of(ws).record(
        result, episode=None, trial=None, role="v0", kernel_path=frozen / "kernel.py", result_path=result_path
    )
    passed = result.status == "PASS"
    record = VersionRecord.from_evaluation(
        0,
        "v0",
        result,
        decision="baseline" if passed else "infra_error" if result.status == "INFRA_ERROR" else "incorrect",
        commit=commit,
        framework="pytorch",
        reason="the verbatim reference" if passed else f"the reference itself failed: {result.message}",
    )
    write_version_record(ws.root, 0, record)
    ws.commit(["memory/v0.json"], v0_record_message(record))
    emit(runtime, ctx, "baseline_v0", "evaluated", status=result.status, objective=result.summary.objective)
    incumbent = incumbent_from_record(record, frozen) if passed else None
    return {"incumbent": incumbent, "next_version": 1, "blocked": None}

