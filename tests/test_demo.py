"""The default main job: `python -m aka_graph run` with no operator runs the demo campaign (example
operator, replay agent, local sandbox, Triton interpreter without a GPU) and shows V0, a correctness
failure, a rejected slower candidate and a promoted faster one, ending with its report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aka_graph.tools.records.ledger import Ledger
from aka_graph.tools.records.memory import read_version_records


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_demo_campaign_end_to_end(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aka_graph", "run", "--workspace", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=880,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    (root,) = [p for p in tmp_path.iterdir() if p.name.startswith("kernel_opt_vq_nearest_code")]
    records = read_version_records(root)
    assert [(r.version, r.decision) for r in records] == [(0, "baseline"), (1, "promoted"), (2, "rejected")]
    assert "INCORRECT" in records[1].experiments[0]  # the correctness failure of trial 1
    assert records[1].objective < records[0].objective  # the promoted kernel is faster than the reference
    assert records[2].objective > records[1].objective  # the rejected one is slower than the incumbent
    ledger = Ledger(root / "records" / "ledger.sqlite")
    assert [e.status for e in ledger.entries(episode=1, role="trial")] == ["INCORRECT", "PASS"]
    assert {d.decision for d in ledger.decisions() if d.kind == "verify"} == {"promoted", "rejected"}
    report = root / "report"
    assert any(report.glob("*.md")) and any(report.glob("*.png"))
    assert json.loads((root / "submission.json").read_text())
    assert "campaign finished: max-iters" in done.stdout and "report:" in done.stdout
    for event in ("[baseline_v0] evaluated", "status=INCORRECT", "outcome=promoted", "outcome=rejected"):
        assert event in done.stderr, event
