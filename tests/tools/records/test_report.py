"""The final report renders versions, decisions and numbers from records, with a real PNG plot."""

from __future__ import annotations

from pathlib import Path

from aka_graph.cli_agents.base import TokenUsage
from aka_graph.tools.evaluator.evaluation_result import DeviceInfo, EvaluationResult, Summary, WorkloadResult
from aka_graph.tools.records.ledger import Ledger
from aka_graph.tools.records.memory import VersionRecord
from aka_graph.tools.records.report import write_final_report
from aka_graph.tools.records.workspace import CampaignWorkspace


def _eval(latency: float, util: float | None) -> EvaluationResult:
    return EvaluationResult(
        status="PASS", kernel_sha256="d" * 64, device=DeviceInfo(name="NVIDIA H200", arch="sm_90"),
        timing_method="cuda_graph", authoritative=True, seeds=[0, 1, 2],
        workloads=[WorkloadResult(id="w1", status="PASS", latency_us=latency, utilization_pct=util)],
        summary=Summary(objective=latency, geomean_latency_us=latency, geomean_utilization_pct=util))


def _records() -> list[VersionRecord]:
    v0 = _eval(100.0, 10.0)
    return [
        VersionRecord.from_evaluation(0, "v0", v0, decision="baseline", commit="a" * 40),
        VersionRecord(version=1, kind="episode", episode=1, decision="incorrect", reason="no trial passed"),
        VersionRecord.from_evaluation(2, "episode", _eval(40.0, 25.0), decision="promoted", baseline=v0,
                                      episode=2, commit="b" * 40),
        VersionRecord.from_evaluation(3, "episode", _eval(55.0, 18.0), decision="rejected", baseline=v0,
                                      episode=3, reason="slower by 37 %",
                                      tokens=TokenUsage(total=500, accuracy="exact")),
    ]


def test_report_has_versions_decisions_speedup_and_a_plot(tmp_path: Path) -> None:
    ws = CampaignWorkspace.open_or_create(tmp_path, "vq", "triton", "H200", False)
    ledger = Ledger(ws.ledger_path)
    ledger.record_decision(episode=2, kind="verify", decision="promoted",
                           numbers={"improvement_pct": 60.0, "p_value": 0.0012})
    ledger.record_agent_run(episode=2, trial=1, role="implementer", attempt=0, session_id="s",
                            tokens=TokenUsage(input=900, output=100, total=1000, accuracy="exact"))
    failed = _eval(1.0, None).model_copy(update={"status": "INCORRECT", "kernel_sha256": "e" * 64,
                                                 "message": "w1: seed 0: 13% of elements match"})
    ledger.record(failed, episode=1, trial=1, role="trial", kernel_path=tmp_path / "k.py",
                  result_path=tmp_path / "r.json")
    path = write_final_report(ws.root, _records(), ledger)
    text = path.read_text()
    assert path == ws.root / "report" / "report.md"
    assert "| v2 | episode | 2 | promoted | 40.00 |" in text
    assert "Best speedup vs V0: 2.50x" in text
    assert "Utilization reached: 25.0 %" in text
    assert "Token spend (every agent session): 1,000" in text
    assert "improvement_pct=60" in text and "p_value=0.0012" in text
    assert "| v1 | episode | 1 | incorrect | — |" in text
    assert "| 1 | 1 | trial | INCORRECT | 1.00 | eeeeeeeeeeee | w1: seed 0: 13% of elements match |" in text
    assert "| w1 | 40.00 | 100.00 | 2.50x | 25.0 % |" in text
    png = ws.root / "report" / "objective.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert "![objective per version](objective.png)" in text


def test_report_without_ledger_or_utilization_still_renders(tmp_path: Path) -> None:
    records = [VersionRecord(version=0, kind="v0", decision="incorrect", reason="reference failed")]
    path = write_final_report(tmp_path, records, None)
    assert "Incumbent: —" in path.read_text()
    assert (tmp_path / "report" / "objective.png").is_file()


def test_long_reasons_are_cut_at_a_word_boundary_never_mid_word() -> None:
    from aka_graph.tools.records.report import cell

    reason = ("verification failed correctness or ran badly: A: the worker reported 91449.033 us per call, "
              "but the harness's own clock times a burst of 1 x 1 calls | of the same invocation\nat "
              "208613.353 us per call: the reported timing was tampered with")
    short = cell(reason, 120)
    assert len(short) <= 120 and short.endswith("…") and "\n" not in short
    kept = short[:-1]
    assert reason.replace("|", "/").replace("\n", " ").startswith(kept)
    assert reason.replace("|", "/").replace("\n", " ")[len(kept)] == " "  # the cut falls between words
    assert cell("slower by 37 %", 120) == "slower by 37 %"
    assert cell("x" * 300, 100) == "x" * 99 + "…"  # one unbreakable token is cut where it must be
