"""Evaluation speed on the GPU (issue 9, Speed): the rmsnorm fixture with the Triton candidate, as an
evaluation job runs the harness. CUDA outputs come back through the shared region (not the pipe), the
verdict is PASS, the start-up timeline holds both processes' CUDA milestones, and a second evaluation
takes the reference latency from the cache when the worker is jailed. Wall times are printed (-s).

Run: python3 -m pytest -m gpu tests/gpu/test_eval_speed_gpu.py -v -s (skipped without CUDA).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, SOL_FIXTURES

pytestmark = pytest.mark.gpu

HARNESS = REPO_ROOT / "aka_graph" / "tools" / "evaluator" / "harness"
KERNEL = REPO_ROOT / "tests" / "tools" / "evaluator" / "harness" / "candidates" / "rmsnorm_triton"


def _job(tmp_path: Path, name: str, cache: Path) -> tuple[dict, float]:
    job = tmp_path / name
    shutil.copytree(HARNESS, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SOL_FIXTURES / "rmsnorm", job / "op")
    shutil.copytree(KERNEL, job / "kernel", ignore=shutil.ignore_patterns("__pycache__"))
    (job / "tmp").mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AKA")}, "HOME": str(job)}
    env.update({"TMPDIR": str(job / "tmp"), "PYTHONPATH": ".", "AKA_CACHE_DIR": str(cache)})
    argv = [sys.executable, "-m", "harness", "evaluate", "--op-dir", "op", "--kernel-dir", "kernel"]
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*argv, "--device", "cuda", "--out", "result.json"], cwd=job, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    assert (job / "result.json").is_file(), proc.stderr[-3000:]
    return json.loads((job / "result.json").read_text()), wall


def test_outputs_come_back_through_the_shared_region_and_the_reference_timing_is_cached(
    tmp_path: Path,
) -> None:
    first, wall1 = _job(tmp_path, "a", tmp_path / "cache")
    second, wall2 = _job(tmp_path, "b", tmp_path / "cache")
    for res, wall in ((first, wall1), (second, wall2)):
        print(f"\nwall {wall:.2f} s phases {res['phases_s']}\ntimeline {res['timeline_s']}")
        print(f"transfer {res['output_transfer']} reference cache {res['reference_timing_cache']}")
        assert res["status"] == "PASS", res["message"]
        transfer = res["output_transfer"]
        assert transfer["shared_region"] is True and transfer["device_shared"] is True, transfer
        # 14 workloads x 3 seeds of bf16 outputs, hundreds of MB: none of it through the pipe, the large
        # ones on the device (device_share.py)
        assert transfer["shared_region_bytes"] + transfer["device_shared_bytes"] > 100 << 20
        assert transfer["device_shared_bytes"] > 50 << 20
        for point in ("worker.cuda_ready", "worker.ready", "parent.device_ready", "parent.contract_probed"):
            assert 0 < res["timeline_s"][point] < res["phases_s"]["total"], point
    if first["isolation"]["worker"] != "namespace":
        pytest.skip(f"worker not jailed here ({first['isolation']['detail']}): the cache stays off")
    assert first["reference_timing_cache"]["cached_workloads"] == []
    assert len(second["reference_timing_cache"]["cached_workloads"]) == len(second["workloads"])
    assert "reference_timing" not in second["phases_s"] or second["phases_s"]["reference_timing"] < 0.5
