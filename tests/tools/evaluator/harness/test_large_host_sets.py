"""A host's timed calls each get a fresh input set of their own, large sets included, and no set twice.

Red team round 25 (CPU): sets over memory.POOL_BYTES (1 GiB drawn per round) got no fresh sets, so a
614 MB embedding gather's timed calls ran on the perturbed bench set, whose integer indices never change,
and a kernel skipping every call on indices it had seen passed at 2.1-2.7 ms against the reference's
40 ms (c02; nothing checked a timed call's outputs). Sets of 342-512 MiB got 2 fresh sets for 5 timed
calls, calls 2-4 repeating sets 0, 1, 0, and a cache keyed on a sample of the inputs answered them
(c01: 2.2-3.4 ms against 22-28 ms). On a host the sets are now as many as the timed calls wherever
memory holds them all at once, and a round never times more calls than it has sets.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from aka_graph.tools.evaluator.harness.bench import Bench
from aka_graph.tools.evaluator.harness.memory import GIB, MIB, fresh_sets
from aka_graph.tools.evaluator.harness.runner import KernelRunner
from aka_graph.tools.evaluator.harness.timing import HOST_REPS, host_reps
from tests.tools.evaluator.harness.near_tie_support import candidate_source
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate

CPU = torch.device("cpu")


@pytest.mark.parametrize(
    ("set_bytes", "spare", "sets"),
    [
        (614 * MIB, 12 * GIB, HOST_REPS),  # c02's gather: had none
        (410 * MIB, 12 * GIB, HOST_REPS),  # c01's projection: had 2
        (1 * MIB, 12 * GIB, HOST_REPS),
        (614 * MIB, 2 * GIB, 0),  # not even one beside the bench: the perturbation stays, as before
        (5 * GIB, 12 * GIB, 0),  # all five at once do not fit: none (a set's outputs are kept per call)
    ],
)
def test_a_hosts_timed_calls_get_fresh_sets_as_far_as_memory_holds_them(
    set_bytes: int, spare: int, sets: int
) -> None:
    assert fresh_sets(set_bytes, spare, "cpu") == sets


def test_a_gpus_fresh_sets_stay_within_the_per_round_draw() -> None:
    """(On a GPU large uncapturable calls keep the perturbation: POOL_BYTES a round; see the notes.)"""
    assert fresh_sets(614 * MIB, 100 * GIB, "cuda") == 0
    assert fresh_sets(100 * MIB, 100 * GIB, "cuda") == 10


@pytest.mark.parametrize(("sets", "reps"), [(None, HOST_REPS), (2, 2), (3, 3), (30, HOST_REPS)])
def test_a_round_never_times_more_calls_than_it_has_sets(sets: int | None, reps: int) -> None:
    assert host_reps(1e-5, sets=sets) == reps


def test_the_bench_times_each_fresh_set_once() -> None:
    seen: list[float] = []

    def kernel(x: torch.Tensor, out: torch.Tensor) -> None:
        seen.append(float(x[0]))
        torch.mul(x, 2.0, out=out)

    bench = Bench(KernelRunner(kernel, True, [((8,), torch.float32)], CPU), [torch.zeros(8)], CPU, 0)
    bench.use_pool([[torch.full((8,), float(j + 1))] for j in range(2)])
    seen.clear()
    timing = bench.measure()
    assert len(timing.samples_us) == 2 and seen == [1.0, 2.0]


@pytest.mark.slow
def test_skipping_calls_on_integer_inputs_seen_before_gains_nothing_on_a_large_set(tmp_path: Path) -> None:
    """c02 end to end (a 614 MB embedding gather, ~100 s here): each timed call now draws fresh indices,
    so the kernel computes every one; before, it passed at 2.7 ms against the reference's 40 ms."""
    cheat = candidate_source("redteam25_c02_int_input_unchanged_skip")
    _, res = evaluate(tmp_path, FIXTURES / "r25rt_big_table_gather", cheat)
    if res["status"] == "PASS":
        for w in res["workloads"]:
            assert w["latency_us"] >= 0.5 * w["reference_latency_us"], w
    else:
        assert res["status"] in ("REWARD_HACK", "INCORRECT"), res["message"]
