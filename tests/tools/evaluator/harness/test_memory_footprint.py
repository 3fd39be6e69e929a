"""End to end on the CPU (issue 9, class 2): the harness's own copies no longer multiply one call's working
set. The scaled MoE fixture (tests/fixtures/sol/memory_heavy_experts_cpu: one call's inputs are a 128 MiB
bf16 expert bank, of which the call reads 8 MiB) is evaluated through the real command, its own reference
as the candidate, and the peak RSS of the trusted parent and of its worker are read from the kernel
(getrusage: the process's own, and its reaped children's). What one-expert inputs cost (the same fixture
with a single expert: the processes' imports, the interpreter, the call itself) is subtracted, so the
bound is on what the harness holds because the inputs are large.

Measured on the 2-core host (two runs each), W = 128 MiB of inputs. Before the memory plan (commit
fc0feae): worker +1362..1384 MiB (10.6..10.8 W: every seed kept alive, a clone, the mixed seed's whole
second set, five fresh timed sets held at once, 640 MiB of float32 temporaries in one draw), parent
+923..938 MiB (7.2..7.3 W); this test fails there. With it: worker +381..592 MiB (3.0..4.6 W), parent
+315..392 MiB (2.5..3.1 W). The bounds below: worker 6 W, parent 4 W.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "sol" / "memory_heavy_experts_cpu"
HARNESS_DIR = REPO_ROOT / "aka_graph" / "tools" / "evaluator" / "harness"
MIB = 1 << 20
W = 16 * 2048 * 2048 * 2 + 4 * 2048 * 2  # one call's inputs: the expert bank and the tokens (~128 MiB)
WORKER_BOUND = 6 * W
PARENT_BOUND = 4 * W

# `harness evaluate` in this process (the trusted parent), then the peak RSS of it and of its reaped
# children (the worker), written where the test reads it
MEASURE = """
import json, os, resource, sys
sys.path.insert(0, os.getcwd())
from harness.cli import main
code = main(sys.argv[2:])
peaks = {"code": code, "parent": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
         "worker": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}
open(sys.argv[1], "w").write(json.dumps(peaks))
os._exit(0)
"""


def _reference_kernel(job: Path) -> Path:
    kernel = job / "kernel"
    kernel.mkdir(parents=True)
    source = json.loads((FIXTURE / "definition.json").read_text())["reference"]
    (kernel / "kernel.py").write_text(source + "\n\nDESTINATION_PASSING_STYLE = False\n")
    return kernel


def _one_expert(root: Path) -> Path:
    """The same operator with a single expert: what the evaluation costs when the inputs are small."""
    op_dir = root / "one_expert"
    op_dir.mkdir()
    shutil.copy(FIXTURE / "definition.json", op_dir / "definition.json")
    row = json.loads((FIXTURE / "workload.jsonl").read_text())
    row["uuid"], row["axes"]["num_experts"] = "experts-1", 1
    (op_dir / "workload.jsonl").write_text(json.dumps(row) + "\n")
    return op_dir


def _peaks(tmp_path: Path, op_dir: Path, tag: str) -> dict[str, Any]:
    job = tmp_path / tag
    shutil.copytree(HARNESS_DIR, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    kernel = _reference_kernel(job)
    out = job / "peaks.json"
    proc = subprocess.run(
        [sys.executable, "-c", MEASURE, str(out), "evaluate", "--op-dir", str(op_dir), "--kernel-dir",
         str(kernel), "--out", str(job / "result.json"), "--device", "cpu", "--seeds", "3"],
        cwd=job, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert out.is_file(), f"exit {proc.returncode}: {proc.stderr[-3000:]}"
    result = json.loads((job / "result.json").read_text())
    assert result["status"] == "PASS", result["message"]
    return json.loads(out.read_text())


@pytest.mark.slow
def test_the_harness_holds_a_small_multiple_of_one_calls_inputs(tmp_path: Path) -> None:
    small = _peaks(tmp_path, _one_expert(tmp_path), "one_expert")
    large = _peaks(tmp_path, FIXTURE, "sixteen_experts")
    worker, parent = large["worker"] - small["worker"], large["parent"] - small["parent"]
    print(
        f"above one expert: worker +{worker / MIB:.0f} MiB ({worker / W:.1f} W), "
        f"parent +{parent / MIB:.0f} MiB ({parent / W:.1f} W); W = {W / MIB:.0f} MiB"
    )
    # both processes were measured (the worker reaped, not a wrapper of it): each held the inputs once.
    # Absolute peaks, not differences: under load the one-expert run's own peak varies by ~200 MiB (its
    # host timing draws as many temporaries as the time allows), which once left the parent's difference
    # at 0.8 W in a loaded CI run although it held the inputs
    assert small["worker"] > 150 * MIB and large["worker"] >= W and large["parent"] >= W
    assert worker <= WORKER_BOUND, f"the worker held {worker / W:.1f}x one call's inputs beyond a small call"
    assert parent <= PARENT_BOUND, f"the parent held {parent / W:.1f}x one call's inputs beyond a small call"
