"""On a CUDA GPU, round twelve's fixtures (tests/tools/evaluator/harness/test_real_benchmark_round12.py)
each PASS with their own reference, and the honest candidates written differently PASS too (among them
a side CUDA stream, a CUDA-graph replay, TF32 switches and Triton kernels compiled for the GPU, which on
CPU only ran their fallbacks or the interpreter). The fixtures still refused on CPU are refused here too
(xfail, strict; the reasons are in that module's docstring), and one honest candidate is refused on the
GPU alone (REFUSED_ON_CUDA below).

Run: python3 -m pytest -m gpu tests/gpu/test_real_benchmark_round12_gpu.py -v -s"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.tools.evaluator.harness.test_adversarial import CANDIDATES
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate, reference_candidate
from tests.tools.evaluator.harness.test_real_benchmark_round12 import (
    SOLUTION_DIR,
    evaluate_solution_dir,
    fixture,
    honest_cases,
    own_reference_cases,
)

pytestmark = pytest.mark.gpu

# Seen on the H200 (2026-12-02) and fixed after, not re-run there (the session's device time was spent):
# honest12_rowwise_dot_bmm and honest12_embedding_index_select were REWARD_HACK "below the physical bound"
# (the bound counted the FLOPs their references execute needlessly: 138.9 us against 68.2 us measured,
# 277.8 us against 4.5 us); the hard bound is the outputs' bytes alone now (speed_of_light.bound).
# torch.compile(mode="reduce-overhead")'s result returned uncloned is CUDA-graph memory the next call
# overwrites: it was RUNTIME_ERROR with the harness's traceback, and is INCORRECT now with the rule and the
# fix named (guards.earlier_spans). Outputs must outlive the next call; the cloned twin PASSes.
CUDA_GRAPH_OUTPUT = (
    "its outputs are overwritten by its next call (CUDA-graph memory): INCORRECT, naming the fix (a clone)"
)
REFUSED_ON_CUDA = {"honest12_compile_reduce_overhead_noclone": CUDA_GRAPH_OUTPUT}


@pytest.mark.parametrize("name", own_reference_cases())
def test_each_round_twelve_fixture_passes_on_cuda_with_its_own_reference(tmp_path: Path, name: str) -> None:
    t0 = time.perf_counter()
    code, res = evaluate(tmp_path, fixture(name), reference_candidate(fixture(name)), device="cuda")
    print(f"{name}: {res['status']} in {time.perf_counter() - t0:.1f} s; phases {res.get('phases_s')}")
    assert code == 0 and res["status"] == "PASS", res["message"]
    assert res["authoritative"] and all(w["status"] == "PASS" for w in res["workloads"])


@pytest.mark.parametrize(("name", "candidate"), honest_cases(REFUSED_ON_CUDA))
def test_each_honest_round_twelve_candidate_passes_on_cuda(tmp_path: Path, name: str, candidate: str) -> None:
    source = (CANDIDATES / candidate / "kernel.py").read_text()
    code, res = evaluate(tmp_path, FIXTURES / name, source, device="cuda")
    for w in res["workloads"]:
        lat, ref = w.get("latency_us"), w.get("reference_latency_us")
        print(f"  {candidate} {w['id'][:20]} {w['status']} latency {lat} us, reference {ref} us")
    assert code == 0 and res["status"] == "PASS", res["message"]


def test_the_deterministic_reference_without_its_environment_write_passes_on_cuda(tmp_path: Path) -> None:
    """use_deterministic_algorithms(True) in the reference and in the candidate, cuBLAS matmuls on both
    sides: PASS on the H200 (2026-12-02), the harness's own CUDA work unhurt by the deterministic mode."""
    name = "r12_deterministic_switches_reference"
    line = 'os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n'
    source = reference_candidate(FIXTURES / name, (line, ""))
    code, res = evaluate(tmp_path, FIXTURES / name, source, device="cuda")
    assert code == 0 and res["status"] == "PASS", res["message"]


def test_a_sol_solution_with_its_entry_point_in_a_subfolder_passes_on_cuda() -> None:
    code, res = evaluate_solution_dir(FIXTURES / "r12_jit_script_helper", SOLUTION_DIR, device="cuda")
    assert code == 0 and res["status"] == "PASS", res["message"]


def test_outputs_a_cuda_graph_overwrites_are_incorrect_and_the_message_names_the_fix(tmp_path: Path) -> None:
    """torch.compile(mode='reduce-overhead') returns its graph's static outputs; the next call overwrites
    them and torch then refuses to read the earlier ones: INCORRECT, saying so (not a harness traceback)."""
    source = (CANDIDATES / "honest12_compile_reduce_overhead_noclone" / "kernel.py").read_text()
    _, res = evaluate(tmp_path, FIXTURES / "r12_odd_description_extra_keys", source, device="cuda")
    assert res["status"] == "INCORRECT", res["message"]
    assert "overwritten by a later call" in res["message"] and "clone" in res["message"]
