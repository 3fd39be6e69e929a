"""On a CUDA GPU, round twelve's fixtures (tests/tools/evaluator/harness/test_real_benchmark_round12.py)
each PASS with their own reference, and the honest candidates written differently PASS too (among them
a side CUDA stream, a CUDA-graph replay, TF32 switches and Triton kernels compiled for the GPU, which on
CPU only ran their fallbacks or the interpreter). The fixtures still refused on CPU are refused here too
(xfail, strict; the reasons are in that module's docstring), and three honest candidates are refused on the
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

# Seen on the H200 (2026-12-02): the hard speed-of-light bound counts the FLOPs the reference executed
# (session.py: reference.outputs(count_flops=True) -> speed_of_light.bound), which is no lower bound when
# the reference does work the operator does not need. r12_diagonal_of_full_matmul (M=8192, K=2048) counts
# the whole M x M product, 275 GFLOP, a 138.9 us bound; the row dot products took 68.2 us.
# r12_one_hot_embedding_matmul (T=4096, V=65536, D=1024) counts 550 GFLOP, a 277.8 us bound; the
# index_select took 4.5 us. Both REWARD_HACK "below the physical bound ... a bug or a cheat, never a win"
# (modes.py, below_bound); the references themselves PASS.
REDUNDANT_FLOPS = (
    "the hard bound counts the reference's executed FLOPs, more than the operator needs: REWARD_HACK on "
    "an honest kernel that skips them (speed_of_light.bound / modes.py below_bound)"
)
# Seen on the H200 (2026-12-02): torch.compile(mode="reduce-overhead")'s result returned uncloned is
# CUDA-graph memory the next call overwrites; guards.output_violations reads the earlier output's storage,
# torch raises, and the verdict is RUNTIME_ERROR with the harness's traceback (the cloned twin PASSes).
CUDA_GRAPH_OUTPUT = (
    "an earlier output that a CUDA-graph replay overwrote raises in guards.output_violations (_span): "
    "RUNTIME_ERROR with the harness's traceback, not a verdict naming the reused-buffer rule"
)
REFUSED_ON_CUDA = {
    "honest12_rowwise_dot_bmm": REDUNDANT_FLOPS,
    "honest12_embedding_index_select": REDUNDANT_FLOPS,
    "honest12_compile_reduce_overhead_noclone": CUDA_GRAPH_OUTPUT,
}


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
