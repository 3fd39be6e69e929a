"""Version and live records round-trip and are written atomically."""

from __future__ import annotations

from pathlib import Path

import pytest

from aka_graph.tools.evaluator.evaluation_result import DeviceInfo, EvaluationResult, Summary, WorkloadResult
from aka_graph.tools.records import memory
from aka_graph.tools.records.memory import LiveRecord, VersionRecord


def _eval(lat: float, status: str = "PASS") -> EvaluationResult:
    return EvaluationResult(
        status=status, kernel_sha256="c" * 64, device=DeviceInfo(name="cpu", arch="cpu"),
        timing_method="host_interpreter", authoritative=False, seeds=[0, 1, 2],
        workloads=[WorkloadResult(id="w1", status=status, latency_us=lat, max_abs_error=1e-3,
                                  utilization_pct=40.0)],
        summary=Summary(objective=lat, geomean_latency_us=lat, geomean_utilization_pct=40.0))


def test_version_records_round_trip_in_version_order(tmp_path: Path) -> None:
    v0 = _eval(100.0)
    for n in (10, 2, 0):
        rec = VersionRecord.from_evaluation(n, "v0" if n == 0 else "episode", _eval(100.0 / (n + 1)),
                                            decision="baseline" if n == 0 else "promoted", baseline=v0,
                                            commit="abc", experiments=["BLOCK=1024"])
        assert memory.write_version_record(tmp_path, n, rec) == tmp_path / "memory" / f"v{n}.json"
    records = memory.read_version_records(tmp_path)
    assert [r.version for r in records] == [0, 2, 10]
    assert records[1].performance[0].speedup_vs_v0 == pytest.approx(3.0)
    assert records[1].correctness is not None and records[1].correctness.seeds == [0, 1, 2]
    assert records[2].experiments == ["BLOCK=1024"] and records[2].utilization_pct == 40.0


def test_mismatched_version_number_is_refused(tmp_path: Path) -> None:
    rec = VersionRecord(version=1, kind="episode", decision="rejected")
    with pytest.raises(ValueError, match="version 1"):
        memory.write_version_record(tmp_path, 2, rec)


def test_failed_write_leaves_the_previous_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memory.write_live(tmp_path, LiveRecord(episode=1, node="implement", trial=1))

    def crash(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(memory.os, "replace", crash)
    with pytest.raises(OSError):
        memory.write_live(tmp_path, LiveRecord(episode=1, node="evaluate", trial=2))
    live = memory.read_live(tmp_path)
    assert live is not None and (live.node, live.trial) == ("implement", 1)
    assert [p.name for p in (tmp_path / "memory").iterdir()] == ["live.json"]  # no temp file left


def test_malformed_record_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "v3.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"v3\.json"):
        memory.read_version_records(tmp_path)
