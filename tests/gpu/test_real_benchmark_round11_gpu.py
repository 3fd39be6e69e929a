"""On a CUDA GPU, round eleven's fixtures (tests/tools/evaluator/harness/test_real_benchmark_round11.py)
each PASS with their own reference, and the honest candidates written differently PASS too.

Run: python3 -m pytest -m gpu tests/gpu/test_real_benchmark_round11_gpu.py -v -s"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.tools.evaluator.harness.test_adversarial import CANDIDATES
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate, reference_candidate
from tests.tools.evaluator.harness.test_real_benchmark_round11 import HONEST, ROUND11

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ROUND11)
def test_each_round_eleven_fixture_passes_on_cuda_with_its_own_reference(tmp_path: Path, name: str) -> None:
    t0 = time.perf_counter()
    code, res = evaluate(tmp_path, FIXTURES / name, reference_candidate(FIXTURES / name), device="cuda")
    print(f"{name}: {res['status']} in {time.perf_counter() - t0:.1f} s; phases {res.get('phases_s')}")
    assert code == 0 and res["status"] == "PASS", res["message"]
    assert res["authoritative"] and all(w["status"] == "PASS" for w in res["workloads"])


@pytest.mark.parametrize(("name", "candidate"), HONEST, ids=[c for _, c in HONEST])
def test_each_honest_round_eleven_candidate_passes_on_cuda(tmp_path: Path, name: str, candidate: str) -> None:
    source = (CANDIDATES / candidate / "kernel.py").read_text()
    code, res = evaluate(tmp_path, FIXTURES / name, source, device="cuda")
    for w in res["workloads"]:
        lat, ref = w.get("latency_us"), w.get("reference_latency_us")
        print(f"  {candidate} {w['id'][:20]} {w['status']} latency {lat} us, reference {ref} us")
    assert code == 0 and res["status"] == "PASS", res["message"]
