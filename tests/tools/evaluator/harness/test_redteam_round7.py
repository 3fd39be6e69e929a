"""Red team, round seven: host timing by the parent's /proc clock, the burst, the static source policy and
the reference's timing (candidates/redteam7_*).

Each PASSed when found; each test asserts what the harness now does about it (the fix is named in it).

- redteam7_exiting_thread: each call's work runs on a thread born and joined inside the call
  (logging.handlers.QueueListener: `threading` itself is banned). hostclock reads the worker's CPU time
  as the live threads' schedstat (an exited thread takes its time with it) or the tick counters less a
  2-tick allowance (20 ms): an ~8 ms interpreted Triton call is read as the ~0.3 ms of starting and
  joining the thread. The burst is answered without work (calls deep in a run of back-to-back calls).
- redteam7_sourceless_pyc: kernel.py only imports `fastpath`, shipped as `fastpath.pyc` (its source
  deleted). The policy scans `.py` and C/C++ sources only; the worker's copy keeps every other file and
  the kernel directory is on sys.path at import, so the bytecode runs unscanned: it walks frames to the
  Bench, computes each timed call in the untimed "prepare" step (an instance attribute shadowing
  Bench.perturb, which the Sentinel does not compare) and skips burst calls.
- redteam7_reference_burner: an honest kernel that starts a thread during the burst (the last thing a
  candidate's code runs; no "threads left running" check follows it) which burns the CPU while the parent
  times the reference, before the workers are stopped (modes.run): an inflated reference latency (the
  speed-up's denominator), then cached for later evaluations (refcache).
"""

from __future__ import annotations

import py_compile
import shutil
from pathlib import Path

import pytest

from tests.tools.evaluator.harness.test_adversarial import (
    CANDIDATES,
    CHEAT_SHAPES,
    REJECTED,
    SOL_FIXTURES,
    describe,
    run_harness,
)

RMSNORM = SOL_FIXTURES / "rmsnorm"
BATCH_170 = ["b010c7f2-801d-41c0-b5d0-be619ecb4090"]  # a call of a few hundred us: a burst of ~100 calls


@pytest.mark.slow
def test_work_on_a_thread_that_exits_inside_the_call_is_not_a_faster_kernel(tmp_path: Path) -> None:
    """The real call is ~8 ms of interpreted Triton (rmsnorm_triton PASSes at ~7.9 ms); it PASSed at
    ~0.2-0.4 ms when found. The parent now reads each process's CPU-time clock, exited threads included
    (proctree.process_cpu_ns): the call is read at what it costs, so skipping the burst gains nothing."""
    result = run_harness(tmp_path, RMSNORM, CANDIDATES / "redteam7_exiting_thread", CHEAT_SHAPES)
    rows = result["workloads"]
    assert result["status"] in REJECTED or all(w["latency_us"] >= 2_000 for w in rows), describe(result)


def _compiled_candidate(tmp_path: Path) -> Path:
    """redteam7_sourceless_pyc as the cheater ships it: kernel.py and fastpath.pyc, no fastpath source."""
    src = CANDIDATES / "redteam7_sourceless_pyc"
    kernel = tmp_path / "sourceless_pyc"
    kernel.mkdir()
    shutil.copy(src / "kernel.py", kernel / "kernel.py")
    py_compile.compile(str(src / "fastpath_source.txt"), cfile=str(kernel / "fastpath.pyc"), doraise=True)
    return kernel


@pytest.mark.slow
def test_bytecode_shipped_beside_kernel_py_never_runs(tmp_path: Path) -> None:
    """It PASSed at ~20-30 us for batch 170 when found (honest torch: several hundred us). The worker's
    copy of the kernel directory now leaves compiled modules out (worker_proc.read_only_copy): the import
    of `fastpath` fails and nothing unscanned runs."""
    kernel = _compiled_candidate(tmp_path)
    result = run_harness(tmp_path, RMSNORM, kernel, BATCH_170)
    assert result["status"] != "PASS", describe(result)
    assert "fastpath" in result["message"], describe(result)


@pytest.mark.slow
def test_a_thread_left_behind_by_the_burst_cannot_slow_the_reference(tmp_path: Path) -> None:
    """The thread starts in a burst call and outlives every check; it burned while the parent timed the
    reference (seen: batch 170's reference read 48 ms instead of ~0.25 ms in 2 of 3 runs). The workers
    are now stopped before the reference is timed (modes.run)."""
    result = run_harness(tmp_path, RMSNORM, CANDIDATES / "redteam7_reference_burner", BATCH_170)
    rows = result["workloads"]
    assert result["status"] in REJECTED or all(
        w["reference_latency_us"] is not None and w["reference_latency_us"] < 10_000 for w in rows
    ), describe(result) + f" reference: {[w['reference_latency_us'] for w in rows]}"
