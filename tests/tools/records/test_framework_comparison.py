"""`run` without --framework ends with the per-framework campaigns side by side, read from each campaign's
own version records (fastest incumbent first; a campaign with no kept version last)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aka_graph.tools.records.framework_comparison import framework_row, render_comparison, write_comparison
from aka_graph.tools.records.memory import VersionRecord, write_version_record


def campaign(root: Path, framework: str, decisions: list[tuple[str, str, float | None]]) -> Path:
    for version, (kind, decision, objective) in enumerate(decisions):
        record = VersionRecord(version=version, kind=kind, decision=decision, objective=objective,
                               utilization_pct=None if objective is None else 1000.0 / objective,
                               framework="pytorch" if kind == "v0" else framework)
        write_version_record(root, version, record)
    return root


def test_the_table_compares_each_framework_against_its_own_v0(tmp_path: Path) -> None:
    triton = campaign(tmp_path / "kernel_opt_op_triton_H200", "triton", [
        ("v0", "baseline", 100.0), ("episode", "promoted", 50.0), ("episode", "rejected", 55.0)])
    cuda = campaign(tmp_path / "kernel_opt_op_cuda_H200", "cuda", [
        ("v0", "baseline", 100.0), ("v1", "pinned", 80.0), ("episode", "promoted", 40.0)])
    failed = campaign(tmp_path / "kernel_opt_op_cute_dsl_H200", "cute_dsl", [
        ("v0", "incorrect", None)])
    path = write_comparison(tmp_path, [("triton", triton), ("cuda", cuda), ("cute_dsl", failed)])
    assert path == tmp_path / "frameworks.md"
    rows = [line for line in path.read_text().splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [r.split(" | ")[0] for r in rows] == ["| cuda", "| triton", "| cute_dsl"]
    cuda_cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cuda_cells[:8] == ["cuda", "100.00", "pinned (80.00)", "v2", "40.00", "2.50x", "25.0%", "1/1"]
    triton_cells = [c.strip() for c in rows[1].strip("|").split("|")]
    assert triton_cells[:8] == ["triton", "100.00", "—", "v1", "50.00", "2.00x", "20.0%", "1/2"]
    assert [c.strip() for c in rows[2].strip("|").split("|")][3:6] == ["—", "—", "—"]


def test_a_campaign_that_never_started_is_a_row_of_empty_cells(tmp_path: Path) -> None:
    text = render_comparison([framework_row("gluon", tmp_path / "missing")])
    assert "| gluon | — | — | — | — | — | — | 0/0 | 0 | missing |" in text


def test_run_without_framework_prints_and_writes_the_comparison(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from types import SimpleNamespace

    from aka_graph.commands.run import print_comparison
    from aka_graph.state import CampaignConfig

    triton = campaign(tmp_path / "kernel_opt_op_triton_H200", "triton", [("v0", "baseline", 10.0)])
    gluon = campaign(tmp_path / "kernel_opt_op_gluon_H200", "gluon", [("v0", "baseline", 10.0),
                                                                     ("episode", "promoted", 5.0)])
    outcomes = [SimpleNamespace(values={"workspace_root": str(root)}) for root in (triton, gluon)]
    print_comparison(CampaignConfig(op_dir="/op", workspace=str(tmp_path)), ["triton", "gluon"], outcomes)
    out = capsys.readouterr().out
    assert "| gluon | 10.00 | — | v1 | 5.00 | 2.00x |" in out and f"frameworks compared: {tmp_path}" in out
    assert (tmp_path / "frameworks.md").read_text() in out
