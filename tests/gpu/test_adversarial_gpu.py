"""Issue 13 on the H200: every adversarial candidate (the CPU ones and the CUDA-only ones: side streams,
capture tricks, timed-call recognition in the CUDA-event fallback) is REWARD_HACK or INCORRECT with
`--device cuda`; the honest controls PASS; an honest uncapturable 10-40 ms kernel is not called faked
(issue 9, class 4); the worker runs jailed (user namespaces) and the result says so.

Run: python3 -m pytest -m gpu tests/gpu/test_adversarial_gpu.py -v"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SOL_FIXTURES
from tests.tools.evaluator.harness.test_adversarial import (
    CANDIDATES,
    CHEAT_FIXTURE,
    CHEAT_SHAPES,
    HARNESS_DIR,
    NO_RESULT,
    REJECTED,
    RESOURCE,
    RMSNORM_SHAPES,
    describe,
)

pytestmark = pytest.mark.gpu
GPU_CANDIDATES = Path(__file__).resolve().parent / "candidates"
# adv_side_stream has a test of its own below: its verdict on a launch-bound shape depends on a race
SIDE_STREAM = "adv_side_stream"
CHEATS = sorted(
    p.name for p in CANDIDATES.glob("adv_*") if p.name not in NO_RESULT | RESOURCE | {SIDE_STREAM}
)
HONEST = [
    ("rmsnorm_torch", "rmsnorm"),
    ("rmsnorm_triton", "rmsnorm"),
    ("nemotron_rms_norm_torch", "nemotron_rms_norm"),
    ("gemma3_swiglu_torch", "gemma3_swiglu"),
]


def run_cuda(tmp_path: Path, fixture: str, kernel_dir: Path, shapes: list[str] | None,
             timeout_s: float = 600) -> dict[str, Any]:
    job = tmp_path / "job"
    shutil.copytree(HARNESS_DIR, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SOL_FIXTURES / fixture, job / "op")
    shutil.copytree(kernel_dir, job / "kernel", ignore=shutil.ignore_patterns("__pycache__"))
    argv = [sys.executable, "-m", "harness", "evaluate", "--op-dir", "op", "--kernel-dir", "kernel",
            "--out", "result.json", "--device", "cuda"]
    for sid in shapes or []:
        argv += ["--shape-id", sid]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = "."
    proc = subprocess.run(argv, cwd=job, env=env, capture_output=True, text=True, timeout=timeout_s)
    out = job / "result.json"
    assert out.is_file(), f"no result.json (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    result = json.loads(out.read_text())
    print(f"{kernel_dir.name}: {describe(result)}")
    return result


def rejected_or_crowded(result: dict[str, Any]) -> bool:
    """Rejected; or, run beside other evaluations on one GPU (gpu_steps.sh's crowded steps), a timing fake
    whose clock dispute the evaluator lays on the other processes' kernels (gpu_neighbours.py): never
    PASS, and REWARD_HACK when the GPU is its own (the `alone` steps)."""
    text = result["message"] + str(result["workloads"])
    return result["status"] in REJECTED or (result["status"] == "INFRA_ERROR" and "held this GPU" in text)


@pytest.mark.parametrize("candidate", [*CHEATS, "adv_uncapturable_timed_skip", "adv_graph_copy_from_first"])
def test_every_cheat_is_rejected_on_the_gpu(candidate: str, tmp_path: Path) -> None:
    fixture, shapes = CHEAT_FIXTURE.get(candidate, ("rmsnorm", CHEAT_SHAPES))
    where = GPU_CANDIDATES if (GPU_CANDIDATES / candidate).is_dir() else CANDIDATES
    result = run_cuda(tmp_path, fixture, where / candidate, shapes)
    assert rejected_or_crowded(result), describe(result)


def test_a_graph_that_copies_its_first_answer_into_the_other_copies_is_caught(tmp_path: Path) -> None:
    """Issue 13, class 1 on the graph path: every rotated copy holds fresh inputs and a random sample of
    copies is verified after the timing (graphcheck.py); with identical copies this cheat passed."""
    result = run_cuda(tmp_path, "rmsnorm", GPU_CANDIDATES / "adv_graph_copy_from_first", RMSNORM_SHAPES)
    assert result["status"] == "REWARD_HACK", describe(result)
    assert "rotated copies of the timed CUDA graph" in result["message"] + str(result["workloads"])


def test_an_uncapturable_kernel_that_skips_the_parents_burst_is_caught(tmp_path: Path) -> None:
    """The CUDA-event fallback's bursts run on fresh sets whose outputs the parent checks afterwards."""
    result = run_cuda(tmp_path, "rmsnorm", GPU_CANDIDATES / "adv_uncapturable_burst_skip", RMSNORM_SHAPES)
    # INCORRECT: it skips every call after its 60th, so the untimed call on the same inputs is wrong too
    assert result["status"] in REJECTED, describe(result)
    assert "of the parent's timing burst" in result["message"] + str(result["workloads"]), describe(result)


def gains_nothing(result: dict[str, Any]) -> bool:
    """Rejected, or every workload read slower than the reference: no speed-up a campaign would keep."""
    if result["status"] in REJECTED:
        return True
    rows = result["workloads"]
    return result["status"] == "PASS" and all(w["latency_us"] > w["reference_latency_us"] for w in rows)


def test_unjoined_side_stream_work_is_caught_or_gains_nothing(tmp_path: Path) -> None:
    """Work left on a stream of the kernel's own is not between the caller's events. Where it outlives the
    host's look after the call (the large rmsnorm workloads: 49-50 of 50 calls on the H200 in round 7) the
    worker sees the outputs change: REWARD_HACK for the whole fixture. Where it is done first (launch-bound
    shapes), its report includes the host's launches (the event fallback, its capture having failed): on
    the H200 145-291 us against the honest graph-timed 18-27 us. Either way it gains nothing."""
    whole = run_cuda(tmp_path / "all", "rmsnorm", CANDIDATES / SIDE_STREAM, None)
    assert whole["status"] == "REWARD_HACK", describe(whole)
    assert "outputs changed after the call returned" in str(whole["workloads"]), describe(whole)
    small = run_cuda(tmp_path / "small", "rmsnorm", CANDIDATES / SIDE_STREAM, CHEAT_SHAPES)
    assert gains_nothing(small), describe(small)


@pytest.mark.parametrize(("candidate", "fixture"), HONEST, ids=[h[0] for h in HONEST])
def test_honest_controls_pass_on_the_gpu(candidate: str, fixture: str, tmp_path: Path) -> None:
    result = run_cuda(tmp_path, fixture, CANDIDATES / candidate, None)
    assert result["status"] == "PASS", describe(result)
    assert result.get("isolation", {}).get("worker") == "namespace", result.get("isolation")


@pytest.mark.parametrize("attempt", range(3))
def test_an_honest_long_uncapturable_kernel_is_never_called_faked(attempt: int, tmp_path: Path) -> None:
    result = run_cuda(tmp_path, "rmsnorm", GPU_CANDIDATES / "honest_uncapturable_long", RMSNORM_SHAPES)
    assert result["status"] == "PASS", describe(result)
    assert all(w["timing_method"] == "cuda_event" for w in result["workloads"]), describe(result)
    assert all(w["latency_us"] > 5_000 for w in result["workloads"]), describe(result)
