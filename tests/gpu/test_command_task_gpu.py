"""Command tasks on a GPU (the H200): the minikern source tree built by its own setup.py, its Triton
kernel timed by its own benchmark with CUDA-graph replay; our evaluator and ABBA comparison on top.

Run on the GPU host: `python3 -m pytest -m gpu tests/gpu/test_command_task_gpu.py -s` (prints a table).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from aka_graph.tasks.evaluator import CommandTaskEvaluator
from aka_graph.tools.evaluator.sandbox.local import LocalSandbox

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "source_tree"
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def candidate(tmp_path: Path, name: str, triton_variant: str | None) -> Path:
    dest = tmp_path / name
    shutil.copytree(FIXTURE / "tree" / "csrc", dest / "csrc")
    (dest / "minikern").mkdir()
    source = (
        FIXTURE / "variants" / triton_variant if triton_variant else FIXTURE / "tree/minikern/triton_ops.py"
    )
    shutil.copyfile(source, dest / "minikern" / "triton_ops.py")
    return dest


def test_minikern_campaign_steps_on_the_gpu(tmp_path: Path) -> None:
    sandbox, evaluator = LocalSandbox(isolation="auto"), CommandTaskEvaluator()
    options = dict(seeds=3, timeout_s=1800, gpu_index=None, device="cuda")
    v0 = candidate(tmp_path, "v0", None)
    fast = candidate(tmp_path, "fast", "triton_ops_fast.py")
    wrong = candidate(tmp_path, "wrong", "triton_ops_wrong_large.py")
    results = {}
    for name, kernel in (("v0", v0), ("fast", fast), ("wrong_large", wrong)):
        results[name] = evaluator.evaluate(sandbox, FIXTURE, kernel, tmp_path / f"r_{name}", **options)
    for name, r in results.items():
        print(
            f"{name:12s} {r.status:14s} {r.timing_method:12s} authoritative={r.authoritative} "
            f"objective_us={r.summary.objective} phases_s={r.phases_s} {r.message[:120]!r}"
        )
    assert results["v0"].status == "PASS" and results["v0"].timing_method == "cuda_graph"
    assert results["v0"].authoritative and results["v0"].device.arch.startswith("sm_")
    assert results["fast"].status == "PASS"
    assert results["wrong_large"].status == "INCORRECT" and "rows128" in results["wrong_large"].message

    comparison = evaluator.compare(
        sandbox, FIXTURE, {"A": v0, "B": fast}, tmp_path / "verify", pattern="ABBA", repeats=3, **options
    )
    assert comparison.status == "PASS", comparison.message
    for r in comparison.rounds:
        print(f"round {r.repeat}.{r.position} {r.label}: {r.latency_us}")
    assert [r.label for r in comparison.rounds] == list("ABBA" * 3)
