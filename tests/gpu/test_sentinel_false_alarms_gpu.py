"""On the H200, what the CPU cannot show of tests/tools/evaluator/harness/test_sentinel_false_alarms.py:

- honest kernels built with torch.compile, torch.library.custom_op, triton_op + wrap_triton PASS (their
  `import torch._dynamo` wraps torch.manual_seed in torch's own wrapper, once read as a patch);
- a patched `statistics.median` (the worker's CUDA-graph timing summary) is REWARD_HACK: the parent
  recomputes the median from the samples (the static policy off, which would reject it first);
- modes left active by the candidate are REWARD_HACK on the CUDA path too;
- an empty batch (every output of zero elements) captures no kernels honestly and PASSes; a reference
  under @torch.inference_mode returning new tensors survives re-validation's poisoned outputs.

Run: python3 -m pytest -m gpu tests/gpu/test_sentinel_false_alarms_gpu.py -v -s"""

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
from tests.tools.evaluator.harness.test_adversarial import CANDIDATES, CHEAT_SHAPES, HARNESS_DIR, describe
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate, reference_candidate

pytestmark = pytest.mark.gpu


def run_cuda(tmp_path: Path, kernel_dir: Path, *extra: str, timeout_s: float = 600) -> dict[str, Any]:
    """rmsnorm (the red team's fixture), one workload, with --device cuda and Triton compiled for real."""
    job = tmp_path / "job"
    shutil.copytree(HARNESS_DIR, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SOL_FIXTURES / "rmsnorm", job / "op")
    shutil.copytree(kernel_dir, job / "kernel", ignore=shutil.ignore_patterns("__pycache__"))
    argv = [sys.executable, "-m", "harness", "evaluate", "--op-dir", "op", "--kernel-dir", "kernel",
            "--out", "result.json", "--device", "cuda", *(a for s in CHEAT_SHAPES for a in ("--shape-id", s)),
            *extra]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = "."
    proc = subprocess.run(argv, cwd=job, env=env, capture_output=True, text=True, timeout=timeout_s)
    out = job / "result.json"
    assert out.is_file(), f"no result.json (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    result = json.loads(out.read_text())
    print(f"{kernel_dir.name}: {describe(result)}")
    return result


@pytest.mark.parametrize(
    "control", ["redteam_control_custom_op", "redteam_control_triton_op", "redteam_control_torch_compile"]
)
def test_honest_dynamo_importing_kernels_pass_on_cuda(control: str, tmp_path: Path) -> None:
    result = run_cuda(tmp_path, CANDIDATES / control)
    assert result["status"] == "PASS", describe(result)
    assert all(w["status"] == "PASS" and (w["latency_us"] or 0) > 0 for w in result["workloads"])


def test_a_patched_median_is_caught_by_the_parent_on_cuda(tmp_path: Path) -> None:
    result = run_cuda(tmp_path, CANDIDATES / "redteam_self_alias_median", "--no-source-policy")
    assert result["status"] == "REWARD_HACK", describe(result)
    print("caught by:", result["message"][:500])


@pytest.mark.parametrize("candidate", ["redteam_function_mode", "redteam_mode_via_device_context"])
def test_a_mode_left_active_is_caught_on_cuda(candidate: str, tmp_path: Path) -> None:
    result = run_cuda(tmp_path, CANDIDATES / candidate, "--no-source-policy")
    assert result["status"] == "REWARD_HACK", describe(result)
    assert "left active" in result["message"] + str(result["workloads"]), describe(result)


@pytest.mark.parametrize("name", ["zero_size_axes", "inference_mode_inplace"])
def test_empty_batches_and_inference_tensors_pass_on_cuda(tmp_path: Path, name: str) -> None:
    code, res = evaluate(tmp_path, FIXTURES / name, reference_candidate(FIXTURES / name), device="cuda")
    for w in res["workloads"]:
        print(f"{name} {w['id']}: {w['status']} {w.get('latency_us')} us {(w.get('message') or '')[:200]}")
    assert code == 0 and res["status"] == "PASS", res["message"]
    assert all(w["status"] == "PASS" for w in res["workloads"])
