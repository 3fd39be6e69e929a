"""On a CUDA GPU, the heavy problems (tests/tools/evaluator/harness/test_heavy_problems.py: a whole 8B
decoder layer with its weights as inputs; causal GQA attention at 4k-32k tokens) PASS with their own
reference within issue 9's bound of 60 s per problem with default settings. Run them with the GPU to
themselves (no -n): the bound is a wall time. Each prints its phases and where the time went (the parent's
spans and the worker's), which is what BENCHMARKS.md records.

Run: python3 -m pytest -m gpu tests/gpu/test_heavy_problems_gpu.py -v -s"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.tools.evaluator.harness.test_heavy_problems import HEAVY
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate, reference_candidate

pytestmark = pytest.mark.gpu
MAX_WALL_S = 60.0  # issue 9: "max <= 60 s per problem with default settings"


def _top(spans: dict[str, dict[str, float]], n: int = 8) -> str:
    ranked = sorted(spans.items(), key=lambda kv: -kv[1]["s"])[:n]
    return "  ".join(f"{k} {v['s']:.2f}/{int(v['n'])}" for k, v in ranked)


@pytest.mark.parametrize("name", HEAVY)
def test_a_heavy_problem_passes_with_its_own_reference_within_a_minute(tmp_path: Path, name: str) -> None:
    t0 = time.perf_counter()
    code, res = evaluate(
        tmp_path, FIXTURES / name, reference_candidate(FIXTURES / name), device="cuda", timeout_s=400
    )
    wall = time.perf_counter() - t0
    print(f"{name}: {res['status']} in {wall:.1f} s; phases {res.get('phases_s')}")
    print(f"  parent: {_top(res.get('spans_s') or {})}")
    print(f"  worker: {_top(res.get('worker_spans_s') or {})}")
    for w in res["workloads"]:
        print(
            f"  {w['id']} {w['status']} {w.get('timing_method')} latency {w.get('latency_us')} us, "
            f"reference {w.get('reference_latency_us')} us; {'; '.join(w.get('notes') or [])[:300]}"
        )
    assert code == 0 and res["status"] == "PASS", res["message"]
    assert res["authoritative"] and all(w["status"] == "PASS" for w in res["workloads"])
    assert wall <= MAX_WALL_S, f"{name} took {wall:.1f} s (issue 9: at most {MAX_WALL_S:.0f} s per problem)"
