"""On the H200, what the CPU cannot show of tests/tools/evaluator/harness/test_sentinel_false_alarms.py:

- honest kernels built with torch.compile, torch.library.custom_op, triton_op + wrap_triton PASS (their
  `import torch._dynamo` wraps torch.manual_seed in torch's own wrapper, once read as a patch);
- a patched `statistics.median` (the worker's timing summary; CUDA graph and CUDA-event fallback) is
  REWARD_HACK: the parent recomputes the median from the samples (the static policy off, which would
  reject it first);
- modes left active by the candidate are REWARD_HACK on the CUDA path too;
- an empty batch (every output of zero elements) captures no kernels honestly and PASSes; a reference
  under @torch.inference_mode returning new tensors survives re-validation's poisoned outputs;
- the worker's GPU timing path does not import torch._dynamo itself (~1.7 s; it wrapped torch.manual_seed
  for the honest zero-size fixture on the H200): if it does, the failure names the import's call site.

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
import torch

from aka_graph.tools.evaluator.harness.bench import Bench
from aka_graph.tools.evaluator.harness.runner import KernelRunner
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


def test_a_patched_median_is_caught_in_the_cuda_event_fallback(tmp_path: Path) -> None:
    kernel = Path(__file__).resolve().parent / "candidates" / "adv_median_patch_event_fallback"
    result = run_cuda(tmp_path, kernel, "--no-source-policy")
    assert result["status"] == "REWARD_HACK", describe(result)
    assert "tampered" in result["message"] + str(result["workloads"]), describe(result)


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


CUDA = torch.device("cuda")


def test_an_empty_result_captures_nothing_honestly_a_non_empty_one_does_not() -> None:
    def nothing(x: torch.Tensor, out: torch.Tensor) -> None:
        pass

    runner = KernelRunner(nothing, True, [((0, 16), torch.float32)], CUDA)
    empty = Bench(runner, [torch.randn(0, 16, device=CUDA)], CUDA, 60 << 20)
    assert empty.graph is not None and empty.graph.kernel_nodes == 0
    assert empty.violations == [] and any("no work" in n for n in empty.notes), empty.notes
    timing = empty.measure()
    assert timing.latency_us >= 0 and timing.method == "cuda_graph"
    # an empty output but an input the operator updates in place: its work may not be skipped
    runner = KernelRunner(nothing, True, [((0,), torch.float32)], CUDA)
    skipped = Bench(runner, [torch.randn(64, device=CUDA)], CUDA, 60 << 20, mutated=[0])
    assert any("captured no kernels" in v for v in skipped.violations), skipped.violations


def test_re_validation_poisons_outputs_created_under_inference_mode() -> None:
    @torch.inference_mode()
    def run(x: torch.Tensor, cache: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cache.add_(x)
        return x.softmax(-1), cache

    runner = KernelRunner(run, False, [((4, 8), torch.float32)] * 2, CUDA)
    bench = Bench(runner, [torch.randn(4, 8, device=CUDA), torch.randn(4, 8, device=CUDA)], CUDA, 60 << 20)
    assert bench.graph is not None, bench.notes
    k = bench.last
    produced = bench.graph.outputs[k][0]
    assert produced.is_inference()
    before = produced.clone()
    bench.write_inputs(k, [torch.randn(4, 8, device=CUDA), torch.randn(4, 8, device=CUDA)])
    bench.poison_outputs(k)  # raised "Inplace update to inference tensor outside InferenceMode"
    assert not torch.equal(produced, before)
    out = bench.replay(k)
    assert torch.allclose(out[0], bench.copies[k][0].softmax(-1))


DYNAMO_PROBE = r"""
import sys, traceback, importlib.abc, torch
seen = []

class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "torch._dynamo" and not seen:
            seen.append("".join(traceback.format_stack(limit=25)))
        return None

sys.meta_path.insert(0, Watch())
from aka_graph.tools.evaluator.harness.bench import Bench
from aka_graph.tools.evaluator.harness.guards import Sentinel
from aka_graph.tools.evaluator.harness.runner import KernelRunner
dev = torch.device("cuda")
sentinel = Sentinel()
def ref(x, scale):
    y = (x.float() * scale).to(x.dtype)
    return y, y.float().sum(-1)
for m in (0, 64):
    runner = KernelRunner(ref, False, [((m, 16), torch.bfloat16), ((m,), torch.float32)], dev)
    bench = Bench(runner, [torch.randn(m, 16, device=dev, dtype=torch.bfloat16), torch.randn(16, device=dev)],
                  dev, 60 << 20)
    bench.measure()
    bench.poison_outputs(bench.last)
    bench.replay(bench.last)
print("VIOLATIONS", sentinel.violations())
print("DYNAMO", seen[0] if seen else "not imported")
"""


def test_the_gpu_timing_path_does_not_import_torch_dynamo(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
           "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}  # fmt: skip
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run([sys.executable, "-c", DYNAMO_PROBE], env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(proc.stdout)
    assert "VIOLATIONS []" in proc.stdout, proc.stdout
    assert "DYNAMO not imported" in proc.stdout, f"the timing path imports torch._dynamo:\n{proc.stdout}"
