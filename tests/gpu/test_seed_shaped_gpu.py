"""On a CUDA GPU, the operators whose inputs follow the seed (ragged rows drawn at random, rows trimmed on
some seeds only, only on a workload the contract's probe skipped) and the random ones (dropout, sampling)
that red teams 23 and 24 found false alarms and cheats on, on a host. Honest kernels PASS; the kernel that
skips calls on buffers it has seen gains nothing.

The larger-workload fixture is the one a CUDA graph meets: its capturable honest kernel is captured on
fixed buffers, the round's fresh sets come in other shapes on about half the seeds, and the parent, after
drawing the seed itself, times the workload again with its buffers fixed (modes._seed_shaped_after_all).

Run: python3 -m pytest -m gpu tests/gpu/test_seed_shaped_gpu.py -v -s"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.tools.evaluator.harness.near_tie_support import candidate_source
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate
from tests.tools.evaluator.harness.test_redteam_round27 import (
    HEAVY_EVERY,
    evaluate_with_bench_seed,
    honest_source,
    padded_fixture,
    speedups,
)

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    ("fixture", "candidate"),
    [
        ("custom_ragged_shapes", "redteam23_h01_ragged_honest"),
        ("r24_ragged_rare_tail", "redteam23_h01_ragged_honest"),
        ("r24_ragged_rare_tail", "honest25_ragged_capturable"),
        ("r24_ragged_rowwise_out", "redteam24_h06_rowwise_out_dps"),
        ("r25_ragged_larger_workloads_only", "redteam23_h01_ragged_honest"),
        ("random_dropout_sampling", "redteam23_h02_dropout_honest"),
        ("r8_kv_cache_empty_step", "redteam23_h03_kvcache_honest"),
    ],
)
def test_an_honest_kernel_of_a_seed_shaped_or_random_operator_passes_on_cuda(
    tmp_path: Path, fixture: str, candidate: str
) -> None:
    t0 = time.perf_counter()
    code, res = evaluate(tmp_path, FIXTURES / fixture, candidate_source(candidate), device="cuda")
    took = time.perf_counter() - t0
    print(f"{fixture} / {candidate}: {res['status']} in {took:.1f} s; {res['message'][:300]}")
    assert code == 0 and res["status"] == "PASS", res["message"]


def test_a_graph_meeting_sets_of_other_shapes_is_timed_again_with_its_buffers_fixed(tmp_path: Path) -> None:
    code, res = evaluate(
        tmp_path,
        FIXTURES / "r25_ragged_larger_workloads_only",
        candidate_source("honest25_ragged_capturable"),
        device="cuda",
    )
    for w in res["workloads"]:
        print(w["id"], w["status"], w["latency_us"], w.get("method"), w["message"][:300])
    assert code == 0 and res["status"] == "PASS", res["message"]
    larger = next(w for w in res["workloads"] if w["id"] == "rl-r16")
    assert "timed again with fixed buffers" in larger["message"], larger
    assert "the inputs' shapes depend on the seed" in res["message"]  # the contract as learned


def test_skipping_calls_on_buffers_seen_before_gains_nothing_on_cuda(tmp_path: Path) -> None:
    """c02 (red team 23): a random operator's call on buffers it has seen does nothing. Inside a CUDA graph
    the capture holds whatever the capture call did; eagerly each timed call gets fresh buffers."""
    _, res = evaluate(
        tmp_path, FIXTURES / "random_dropout_sampling", candidate_source("redteam23_c02_dropout_skip_timed"),
        device="cuda",
    )  # fmt: skip
    print(res["status"], res["message"][:400])
    if res["status"] == "PASS":
        for w in res["workloads"]:
            assert w["latency_us"] >= 0.8 * w["reference_latency_us"], w
    else:
        assert res["status"] in ("REWARD_HACK", "INCORRECT"), res["message"]


# the long batch's index_add of 512 Ki rows (~2.5 ms on the H200) outweighs the reference's host round trips
# (0.25-0.6 ms from one evaluation to the next, the noise the assertion below must allow)
GPU_ROWS = 1 << 19


@pytest.mark.parametrize(
    ("candidate", "method"),
    [("reference", "cuda_event"), ("honest27_padded_triton_early_exit", "cuda_graph")],
    ids=["uncapturable, CUDA events", "a CUDA graph"],
)
def test_an_honest_kernel_of_the_padded_operator_reads_the_same_on_a_long_and_a_usual_bench_set(
    tmp_path: Path, candidate: str, method: str
) -> None:
    """Red team round 27's h01 on a GPU: the padded batch's valid rows follow the seed (all of them on one
    seed in 16), every shape fixed. The kernel's timed calls run on fresh sets, a call per set (events) or
    one set per graph copy; its reference was timed on the bench's one set, so where the bench seed drew
    the long batch, the same kernel read several times faster than where it drew the usual one. Now the
    reference is timed on the kernel's own sets (trusted.Reference.time_on_sets): the speed-up no longer
    follows the bench seed. The timed sets are all the usual batch here (`usual_sets`): a graph of one
    copy holds one fresh set, long on one round in 16, and its speed-up then is that set's, rightly.
    Measured before the change (round 28, 256 Ki rows): 2.95x against 0.80x (events), 142x against 48x
    (graph); after it 0.58x against 1.31x (the events' host noise), 39x against 31x."""
    source = honest_source() if candidate == "reference" else gpu_candidate(candidate)
    ratios = {}
    for bench, seed in {"long": 7 * HEAVY_EVERY, "usual": 7 * HEAVY_EVERY + 1}.items():
        op = padded_fixture(tmp_path / bench, GPU_ROWS)
        res = evaluate_with_bench_seed(tmp_path / bench, op, source, seed, device="cuda", usual_sets=True)
        assert res["status"] == "PASS", res["message"]
        w = res["workloads"][0]
        print(f"{candidate} {bench}: {w['latency_us']:.1f} us, reference {w['reference_latency_us']:.1f} us "
              f"({w['timing_method']} / {w['reference_timing_method']})")  # fmt: skip
        assert w["timing_method"] == method  # the case in question
        ratios[bench] = speedups(res)[0]
    assert 1 / 3 < ratios["long"] / ratios["usual"] < 3, ratios


def gpu_candidate(name: str) -> str:
    return (Path(__file__).resolve().parent / "candidates" / name / "kernel.py").read_text()
