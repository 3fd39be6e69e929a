"""The default main job: `python -m aka_graph run` with no operator runs the demo campaign (example
operator, replay agent, local sandbox, Triton interpreter without a GPU) and shows V0, a correctness
failure, a rejected slower candidate and a promoted faster one, ending with its report.

The decisions are tested with a deterministic timing (the demo's own replay agent and kernels, an
evaluator that times each kernel by which one it is), so they never depend on how busy the host is. One
real end-to-end run checks the structure only: every step ran and left its records; whether the
interpreter found the fast kernel faster on this host is not its question.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aka_graph.cli_agents.registry import make_backend
from aka_graph.commands.run import demo_operator, demo_settings
from aka_graph.context import CampaignContext
from aka_graph.progress import Progress
from aka_graph.runner import run_campaign
from aka_graph.state import CampaignConfig
from aka_graph.tools.records.ledger import Ledger
from aka_graph.tools.records.memory import read_version_records

sys.path.insert(0, str(Path(__file__).parent / "nodes"))
from campaign_fakes import FakeEvaluator, FakeSandbox

REFERENCE_US = 100.0


def demo_timing(latencies: dict[str, float]) -> FakeEvaluator:
    """Status and latency by which demo kernel is evaluated (the reference: REFERENCE_US)."""
    kernels = demo_operator() / "kernels"
    known = {(kernels / f"{name}.py").read_text(): name for name in ("incorrect", "fast", "slow")}

    def classify(source: str) -> tuple[str, float]:
        name = known.get(source, "reference")
        if name == "incorrect":
            return "INCORRECT", 0.0
        return "PASS", latencies.get(name, REFERENCE_US)

    sandbox = FakeSandbox()
    return FakeEvaluator(sandbox, classify=classify)


def demo_campaign(tmp_path: Path, latencies: dict[str, float]) -> Path:
    example = demo_operator()
    settings = {**demo_settings(example), "platform": "cpu", "workspace": str(tmp_path / "ws")}
    config = CampaignConfig(**settings)
    evaluator = demo_timing(latencies)
    ctx = CampaignContext(
        sandbox=evaluator.sandbox,
        agent=make_backend("replay", replay_script=Path(config.replay_script or "")),
        evaluator=evaluator,
        reviewers={},
        sleep=lambda _: None,
    )
    outcome = run_campaign(config, ctx, progress=Progress.for_terminal(quiet=True))
    assert outcome.status == "finished"
    return Path(outcome.values["workspace_root"])


def test_demo_promotes_the_faster_kernel_and_rejects_the_slower_one(tmp_path: Path) -> None:
    root = demo_campaign(tmp_path, {"fast": 50.0, "slow": 80.0})
    records = read_version_records(root)
    assert [(r.version, r.decision) for r in records] == [(0, "baseline"), (1, "promoted"), (2, "rejected")]
    assert "INCORRECT" in records[1].experiments[0]  # the correctness failure of trial 1
    assert records[1].objective < records[0].objective
    ledger = Ledger(root / "records" / "ledger.sqlite")
    assert [e.status for e in ledger.entries(episode=1, role="trial")] == ["INCORRECT", "PASS"]
    verify = [d.decision for d in ledger.decisions() if d.kind == "verify"]
    assert verify == ["promoted", "rejected"]


def test_demo_decisions_follow_the_timing_not_the_script(tmp_path: Path) -> None:
    """The same replayed agent, timed the other way round: the 'fast' kernel is slower than the
    reference (rejected) and the 'slow' one beats it (promoted)."""
    root = demo_campaign(tmp_path, {"fast": 130.0, "slow": 60.0})
    records = read_version_records(root)
    assert [(r.version, r.decision) for r in records] == [(0, "baseline"), (1, "rejected"), (2, "promoted")]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_demo_campaign_end_to_end(tmp_path: Path) -> None:
    """The real demo (interpreter, local sandbox, replay agent): every step ran and left its records."""
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
    assert [r.version for r in records] == [0, 1, 2]
    assert records[0].decision == "baseline" and records[0].objective > 0
    assert {r.decision for r in records[1:]} <= {"promoted", "rejected"}
    assert "INCORRECT" in records[1].experiments[0]  # the correctness failure of trial 1 (not timing)
    ledger = Ledger(root / "records" / "ledger.sqlite")
    assert [e.status for e in ledger.entries(episode=1, role="trial")] == ["INCORRECT", "PASS"]
    assert [e.status for e in ledger.entries(episode=2, role="trial")] == ["PASS"]
    verify = [d for d in ledger.decisions() if d.kind == "verify"]
    assert len(verify) == 2 and {d.decision for d in verify} <= {"promoted", "rejected"}
    report = root / "report"
    assert any(report.glob("*.md")) and any(report.glob("*.png"))
    assert json.loads((root / "submission.json").read_text())
    assert "campaign finished: max-iters" in done.stdout and "report:" in done.stdout
    for event in ("[baseline_v0] evaluated", "status=INCORRECT", "outcome="):
        assert event in done.stderr, event
