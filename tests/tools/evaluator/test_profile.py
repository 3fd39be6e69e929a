"""Profiling: the summary parsers on samples of ncu's raw CSV page and rocprofv3's kernel stats
(profile_samples/README.md), the profiler command lines (ncu and rocprofv3, tested by configuration),
`python -m harness profile` running one workload for real, and the command's argument checks.

The job plumbing test puts a stand-in named `ncu` on PATH (there is no profiler on this machine): it runs
the real harness command it is given, and answers `--import` with the recorded CSV. What it shows is the
wiring (the harness runs in the sandbox job, files come back, the summary and report land in profiles/,
private mode keeps the report and launch sizes out); the real profiler runs in tests/gpu."""

from __future__ import annotations

import csv
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aka_graph.cli import app
from aka_graph.tools.evaluator.profile import (
    NCU_CSV,
    ProfileResult,
    harness_argv,
    job_script,
    ncu_argv,
    parse_ncu_raw_csv,
    parse_rocprof_stats_csv,
    profile_kernel,
    rocprof_argv,
)
from tests.conftest import REPO_ROOT, SOL_FIXTURES

SAMPLES = Path(__file__).parent / "profile_samples"
RMSNORM = SOL_FIXTURES / "rmsnorm"
BATCH7 = "33bf737d-3b37-4e38-be80-ea39b4b46ae6"
TORCH_RMSNORM = """
import torch

def run(hidden_states, weight, output):
    x = hidden_states.float()
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * weight.float()).to(output.dtype))
"""


def test_ncu_raw_csv_summary() -> None:
    kernels = parse_ncu_raw_csv((SAMPLES / "ncu_raw.csv").read_text())
    top = kernels[0]
    assert top.name == "_rmsnorm_kernel" and top.calls == 2
    assert top.duration_us == pytest.approx((60.512 + 61.104) / 2)  # "60,512" nsecond
    assert top.dram_gbps == pytest.approx(3900.0)  # 3.90 Tbyte/second on average
    assert top.memory_pct == pytest.approx((89.71 + 88.95) / 2)
    assert top.compute_pct == pytest.approx((21.08 + 20.87) / 2)
    assert top.occupancy_pct == pytest.approx((84.50 + 84.12) / 2) and top.registers == 32
    assert [r for r, _ in top.stalls] == ["long_scoreboard", "wait", "short_scoreboard", "barrier"]
    assert top.grid == "(14418, 1, 1)" and top.block == "(1024, 1, 1)"
    assert kernels[1].name.startswith("void at::native::vectorized_elementwise_kernel")
    assert parse_ncu_raw_csv("==PROF== No kernels were profiled.\n") == []


def test_rocprofv3_stats_summary() -> None:
    kernels = parse_rocprof_stats_csv((SAMPLES / "rocprofv3_kernel_stats.csv").read_text())
    assert [k.name for k in kernels] == ["_rmsnorm_kernel", "__amd_rocclr_fillBufferAligned"]
    assert kernels[0].calls == 3 and kernels[0].duration_us == pytest.approx(68.459)
    assert kernels[0].dram_gbps is None  # counters need --pmc runs


def test_profiler_command_lines() -> None:
    run = harness_argv("python3", BATCH7, 3)
    assert run[:4] == ["python3", "-m", "harness", "profile"] and run[-2:] == ["--shape-id", BATCH7]
    ncu = ncu_argv(run)
    assert ncu[:5] == ["ncu", "--target-processes", "all", "--profile-from-start", "off"]
    assert "--clock-control" in ncu and ncu[ncu.index("--clock-control") + 1] == "none"
    assert ncu[ncu.index("--cache-control") + 1] == "all"
    assert "gpu__time_duration.sum" in ",".join(ncu) and ncu[-len(run) :] == run
    # ncu takes one --metrics ("option '--metrics' cannot be specified more than once", on the H200)
    metrics = ncu[ncu.index("--metrics") + 1]
    assert ncu.count("--metrics") == 1 and ",regex:^smsp__average_warps_issue_stalled_" in metrics
    # every option ncu sees is given once
    options = [a for a in ncu[: -len(run)] if a.startswith("--") and a != "--section"]
    assert len(options) == len(set(options)), options
    roc = rocprof_argv(run)
    assert roc[:3] == ["rocprofv3", "--kernel-trace", "--stats"] and roc[roc.index("--") + 1 :] == run
    amd = job_script("amd", run)
    assert amd.startswith("rocprofv3 --kernel-trace") and "kernel_stats.csv" in amd
    nv = shlex.split(job_script("nvidia", run).split(" && ")[1].split(" > ")[0])
    assert nv == ["ncu", "--import", "profile.ncu-rep", "--csv", "--page", "raw"]


def test_harness_profile_runs_one_workload(tmp_path: Path) -> None:
    job = tmp_path / "job"
    shutil.copytree(REPO_ROOT / "aka_graph" / "tools" / "evaluator" / "harness", job / "harness")
    shutil.copytree(RMSNORM, job / "op")
    (job / "kernel").mkdir()
    (job / "kernel" / "kernel.py").write_text(TORCH_RMSNORM)
    argv = harness_argv(sys.executable, BATCH7, 2, device="cpu")
    env = {**os.environ, "PYTHONPATH": "."}
    proc = subprocess.run(argv, cwd=job, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    info = json.loads((job / "profile_run.json").read_text())
    assert info == {"workload": BATCH7, "reps": 2, "warmup": 2, "device": "cpu"}


STAND_IN = """#!/bin/sh
# stand-in for ncu: run the profiled command (everything after the options), or print the recorded CSV
if [ "$1" = "--import" ]; then cat "{sample}"; exit 0; fi
while [ $# -gt 0 ]; do case "$1" in */python*) break;; *) shift;; esac; done
"$@" && touch profile.ncu-rep
"""


def profile_with(tmp_path: Path, ncu_script: str, private: bool = False) -> ProfileResult:
    """`profile_kernel` on the rmsnorm fixture in a local sandbox, `ncu_script` being the ncu on PATH."""
    from aka_graph.tools.evaluator.sandbox.factory import SandboxSpec, make_sandbox

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ncu").write_text(ncu_script)
    (bin_dir / "ncu").chmod(0o755)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(TORCH_RMSNORM)
    old_path = os.environ["PATH"]
    os.environ["PATH"] = f"{bin_dir}:{old_path}"
    try:
        sandbox = make_sandbox(SandboxSpec(isolation="none"))
        return profile_kernel(sandbox, RMSNORM, kernel, tmp_path / "profiles", shape_id=BATCH7,
                              private=private, python=sys.executable, timeout_s=300)  # fmt: skip
    finally:
        os.environ["PATH"] = old_path


@pytest.mark.parametrize("private", [False, True])
def test_profile_job_writes_summary_and_report(tmp_path: Path, private: bool) -> None:
    result = profile_with(tmp_path, STAND_IN.format(sample=SAMPLES / "ncu_raw.csv"), private)
    out = tmp_path / "profiles"
    assert result.ok, result.message
    assert result.summary is not None and result.summary.workload == BATCH7
    saved = json.loads((out / f"profile_{BATCH7}.json").read_text())
    assert saved["kernels"][0]["name"] == "_rmsnorm_kernel"
    text = (out / f"profile_{BATCH7}.txt").read_text()
    assert "stalls: long_scoreboard 12.01" in text
    raw = out / f"profile_{BATCH7}.csv"
    if private:
        assert not raw.exists() and "14418" not in text and saved["kernels"][0]["grid"] is None
    else:
        assert raw.read_text() == (SAMPLES / "ncu_raw.csv").read_text() and "grid (14418, 1, 1)" in text
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []
    assert NCU_CSV not in {p.name for p in out.iterdir()}


FAILING_NCU = """#!/bin/sh
# stand-in for an ncu that cannot profile: like the real one, it says why on stdout and exits 1
echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access GPU Performance Counters"
exit 1
"""


def test_a_failing_profiler_says_why_from_its_stdout(tmp_path: Path) -> None:
    """ncu prints its own errors on stdout (==ERROR== ...): a failed job's message carries them, never an
    empty 'exit 1:' (seen on the H200, round 4)."""
    result = profile_with(tmp_path, FAILING_NCU)
    assert not result.ok
    assert result.message.startswith("the profiler job failed (exit 1): ")
    assert "ERR_NVGPUCTRPERM" in result.message


def test_profile_command_argument_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["profile", str(tmp_path / "nope"), str(tmp_path)])
    assert res.exit_code == 2 and "operator directory" in res.output
    res = runner.invoke(app, ["profile", str(RMSNORM), str(tmp_path), "--vendor", "intel"])
    assert res.exit_code == 2 and "--vendor 'intel': use nvidia or amd" in res.output


@pytest.mark.parametrize(
    ("unit", "gbps"),
    [("Tbyte/s", 3600.326), ("TB/s", 3600.326), ("Tbyte/second", 3600.326), ("Gbyte/s", 3.600326),
     ("byte/s", 3.600326e-9), ("furlong/fortnight", None)],
)  # fmt: skip
def test_a_rate_is_read_in_whatever_unit_ncu_spells(unit: str, gbps: float | None) -> None:
    """On the H200 ncu's 3.600326 per-second DRAM rate came in a spelling the table lacked, and was taken
    as GB/s: a 3.6 TB/s kernel read as 4 GB/s. Prefixes are read from the unit; an unknown unit gives no
    figure, never a wrong one."""
    lines = (SAMPLES / "ncu_raw.csv").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))  # after ncu's ==PROF== lines
    header, units, *rows = csv.reader(lines[start:])
    column = header.index("dram__bytes.sum.per_second")
    units[column] = unit
    for row in rows:
        if len(row) > column:  # a kernel's row (not ncu's closing lines)
            row[column] = "3.600326"
    out = io.StringIO()
    out.write("\n".join(lines[:start]) + "\n")
    csv.writer(out, quoting=csv.QUOTE_ALL).writerows([header, units, *rows])  # as ncu writes it
    top = parse_ncu_raw_csv(out.getvalue())[0]
    assert top.dram_gbps == (pytest.approx(gbps) if gbps is not None else None)
