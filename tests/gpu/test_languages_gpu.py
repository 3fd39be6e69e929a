"""Issue 10 on the GPU: every language of the acceptance set (tests/fixtures/solutions/manifest.json:
CUDA C++, CUTLASS, cuDNN, CuTe DSL, cuTile, Gluon, Triton, PyTorch) PASSes in our evaluator; a broken
CUDA kernel gives a short exact COMPILE_ERROR (printed: the recorded nvcc output); the stale-binary trap
(kernel.cu edited between evaluations) runs the new code; `profile` of the CUDA RMSNorm agrees with the
evaluator's bandwidth within 10 %.

A language whose toolchain or wheel the host lacks is skipped with the evaluator's INFRA_ERROR message
(what to install); one the GPU cannot run (cuTile below sm_100) is skipped by compute capability.

The evaluations run the GPU-side harness directly (as a sandbox job runs it) with this process's
PYTHONPATH after the job's own `.`, so packages the session installed with `pip --target` (the kit's
nvidia-cutlass, a CuTe DSL) are seen there as in the shell.

Run (pytest-xdist: the C++ builds, 60-90 s each on the H200, overlap; the profile test takes the GPU
alone through a lock file, the others share it):
    python3 -m pytest -m gpu tests/gpu/test_languages_gpu.py -rA -n 8 --timeout 540
(-rA, not -s: under xdist the printed figures come back in the summary only); on the H200 with the kit:
bash benchmarks/gpu_languages.sh tests"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.conftest import REPO_ROOT
from tests.fixtures.solutions.acceptance import Solution, solutions

pytestmark = pytest.mark.gpu
HARNESS_DIR = REPO_ROOT / "aka_graph" / "tools" / "evaluator" / "harness"
SOLUTIONS = {s.name: s for s in solutions()}
GPU_LOCK = Path(tempfile.gettempdir()) / "aka_languages_gpu.lock"


@contextlib.contextmanager
def gpu(exclusive: bool = False) -> Iterator[None]:
    """Evaluations under pytest-xdist share the GPU (shared lock); a test that compares two measurements
    (the profile against the evaluator) holds it alone, so no other process's kernels are in its numbers."""
    with open(GPU_LOCK, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def job_env() -> dict[str, str]:
    """The harness's environment: the job directory first on the path, then this process's PYTHONPATH
    (where the session installed the kit), which the harness hands on to its worker."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (".", os.environ.get("PYTHONPATH", "")) if p)
    return env


def evaluate(
    tmp_path: Path,
    op_dir: Path,
    kernel_dir: Path,
    shapes: list[str] | None = None,
    seeds: int = 3,
    lock: bool = True,
) -> dict[str, Any]:
    """One evaluation by the harness in a fresh job directory (under the shared GPU lock unless the caller
    holds the GPU already)."""
    job = tmp_path / "job"
    shutil.copytree(HARNESS_DIR, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(op_dir, job / "op")
    shutil.copytree(kernel_dir, job / "kernel", ignore=shutil.ignore_patterns("__pycache__"))
    argv = [
        sys.executable,
        "-m",
        "harness",
        "evaluate",
        "--op-dir",
        "op",
        "--kernel-dir",
        "kernel",
        "--out",
        "result.json",
        "--device",
        "cuda",
        "--seeds",
        str(seeds),
    ]
    for sid in shapes or []:
        argv += ["--shape-id", sid]
    with gpu() if lock else contextlib.nullcontext():
        proc = subprocess.run(argv, cwd=job, env=job_env(), capture_output=True, text=True, timeout=600)
    out = job / "result.json"
    assert out.is_file(), f"no result.json (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    result = json.loads(out.read_text())
    lat = [w["latency_us"] for w in result["workloads"] if w.get("latency_us")]
    print(
        f"\n{kernel_dir.name}: {result['status']} {result['timing_method']} "
        f"latencies {[round(x, 2) for x in lat]} phases {result.get('phases_s')}"
    )
    return result


def capability() -> float:
    major, minor = torch.cuda.get_device_capability()
    return major + minor / 10


def biggest_workload(op_dir: Path) -> str:
    rows = [json.loads(line) for line in (op_dir / "workload.jsonl").read_text().splitlines() if line.strip()]
    return max(rows, key=lambda r: sum(v for v in r["axes"].values() if isinstance(v, int)))["uuid"]


@pytest.mark.parametrize("name", sorted(SOLUTIONS))
def test_every_language_passes(tmp_path: Path, name: str) -> None:
    sol: Solution = SOLUTIONS[name]
    if capability() < sol.min_cc:
        pytest.skip(f"{sol.language} needs compute capability {sol.min_cc}+, this GPU is {capability()}")
    result = evaluate(tmp_path, sol.op_dir, sol.kernel_dir)
    if result["status"] == "INFRA_ERROR":
        pytest.skip(f"{sol.language}: the host lacks its toolchain: {result['message'][:300]}")
    assert result["status"] == "PASS", result["message"][:2000]
    assert result["authoritative"] and all(w["status"] == "PASS" for w in result["workloads"])


def _rmsnorm_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "cuda_rmsnorm"
    shutil.copytree(SOLUTIONS["cuda_rmsnorm"].kernel_dir, dest)
    return dest


def test_broken_cuda_kernel_is_a_short_exact_compile_error(tmp_path: Path) -> None:
    kdir = _rmsnorm_copy(tmp_path)
    lines = (kdir / "kernel.cu").read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if "sq += f[i] * f[i];" in line)
    lines[n] = lines[n].replace("f[i] * f[i]", "f[i] * f[i] * undefined_gain")
    (kdir / "kernel.cu").write_text("\n".join(lines) + "\n")
    result = evaluate(tmp_path / "a", SOLUTIONS["cuda_rmsnorm"].op_dir, kdir, seeds=1)
    print("COMPILE_ERROR message (recorded nvcc output, trimmed):\n" + result["message"])
    assert result["status"] == "COMPILE_ERROR"
    assert f'kernel.cu:{n + 1}: error: identifier "undefined_gain" is undefined' in result["message"]
    assert len(result["message"].splitlines()) <= 8


def test_stale_binary_trap_rebuilds_the_edited_kernel(tmp_path: Path) -> None:
    sol = SOLUTIONS["cuda_rmsnorm"]
    kdir = _rmsnorm_copy(tmp_path)
    shape = [biggest_workload(sol.op_dir)]
    first = evaluate(tmp_path / "a", sol.op_dir, kdir, shape, seeds=1)
    assert first["status"] == "PASS", first["message"]
    source = (kdir / "kernel.cu").read_text()
    edited = source.replace(
        "f[i] * inv_rms * __bfloat162float(wv[i])", "f[i] * inv_rms * __bfloat162float(wv[i]) * 2.f"
    )
    assert edited != source
    (kdir / "kernel.cu").write_text(edited)
    second = evaluate(tmp_path / "b", sol.op_dir, kdir, shape, seeds=1)
    assert second["status"] == "INCORRECT", second["message"]  # the edited code ran
    assert second["kernel_sha256"] != first["kernel_sha256"]


def test_profile_bandwidth_agrees_with_the_evaluator(tmp_path: Path) -> None:
    from aka_graph.tools.evaluator.profile import find_profiler, profile_kernel
    from aka_graph.tools.evaluator.sandbox.factory import SandboxSpec, make_sandbox

    if not Path(find_profiler("nvidia")).is_file():
        pytest.skip("ncu (Nsight Compute) not found on PATH or in /usr/local/cuda/bin")
    sol = SOLUTIONS["cuda_rmsnorm"]
    shape = biggest_workload(sol.op_dir)
    with gpu(exclusive=True):
        result = evaluate(tmp_path / "eval", sol.op_dir, sol.kernel_dir, [shape], seeds=1, lock=False)
        assert result["status"] == "PASS", result["message"]
        sandbox = make_sandbox(SandboxSpec(isolation="none"))
        prof = profile_kernel(
            sandbox,
            sol.op_dir,
            sol.kernel_dir,
            tmp_path / "profiles",
            shape_id=shape,
            python=sys.executable,
            timeout_s=600,
        )
    w = result["workloads"][0]
    eval_gbps = w["bytes_moved"] / (w["latency_us"] * 1e-6) / 1e9
    if "ERR_NVGPUCTRPERM" in prof.message:
        pytest.skip("ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM): run as root")
    assert prof.ok and prof.summary is not None, prof.message
    print(prof.summary.render())
    top = prof.summary.kernels[0]
    assert "rmsnorm" in top.name and top.dram_gbps is not None
    print(
        f"evaluator: {eval_gbps:.0f} GB/s ({w['utilization_pct']:.1f} % of the measured ceiling), "
        f"ncu: {top.dram_gbps:.0f} GB/s DRAM, memory throughput {top.memory_pct} % of peak, "
        f"{top.duration_us:.2f} us vs evaluator {w['latency_us']:.2f} us"
    )
    assert abs(top.dram_gbps - eval_gbps) / eval_gbps <= 0.10
    assert (tmp_path / "profiles" / f"profile_{shape}.ncu-rep").is_file()
