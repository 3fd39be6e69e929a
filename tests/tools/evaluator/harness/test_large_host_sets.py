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
from types import SimpleNamespace

import pytest
import torch

from aka_graph.tools.evaluator.harness import worker as worker_mod
from aka_graph.tools.evaluator.harness.bench import Bench
from aka_graph.tools.evaluator.harness.memory import GIB, MIB, fresh_sets
from aka_graph.tools.evaluator.harness.modes import burst_basis
from aka_graph.tools.evaluator.harness.runner import KernelRunner
from aka_graph.tools.evaluator.harness.spotcheck import burst_inputs
from aka_graph.tools.evaluator.harness.timing import HOST_REPS, host_reps
from aka_graph.tools.evaluator.harness.worker import Worker
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


# --- honest kernels whose cost follows the data (red team round 25: false alarms) ------------------------
#
# A host's timed calls and its parent's burst each run on fresh sets. The report is the median of 5 timed
# calls, the burst's per-call figure a mean of ~60: where an honest kernel's cost follows the data (a
# padded batch full on one seed in four: 2 of 4 runs REWARD_HACK), the mean is several times the median.
# And a seed-shaped operator's burst ran on the bench's own set alone, against timed calls on sets of other
# sizes (a set 256 times the usual one on a third of the seeds: 3 of 6 runs REWARD_HACK). After: 8 of 8
# runs of each PASS (BENCHMARKS.md, round 25).


@pytest.mark.parametrize(
    ("samples", "on_gpu", "basis"),
    [
        ([100.0, 100.0, 100.0, 2000.0, 2000.0], False, 860.0),  # a skewed host round: the mean
        ([100.0, 110.0, 120.0, 130.0, 140.0], False, 120.0),  # steady: the median as reported
        ([100.0, 100.0, 100.0, 2000.0, 2000.0], True, 100.0),  # a GPU's graph replays: as reported
        ([], False, 100.0),
    ],
)
def test_the_burst_is_held_against_the_timed_calls_mean_on_a_host_where_it_is_higher(
    samples: list[float], on_gpu: bool, basis: float
) -> None:
    latency = sorted(samples)[len(samples) // 2] if samples else 100.0
    assert burst_basis(latency, {"samples_us": samples}, on_gpu) == pytest.approx(basis)


@pytest.mark.parametrize(("device", "staged"), [("cpu", True), ("cuda", False)])
def test_a_seed_shaped_operators_burst_runs_on_fresh_sets_on_a_host(device: str, staged: bool) -> None:
    session = SimpleNamespace(contract={"layout_varies": True}, device=torch.device(device))
    assert (burst_inputs(session, None, 0) is not None) is staged
    session.contract = {"layout_varies": True, "stochastic": True}  # a random one: never checkable
    assert burst_inputs(session, None, 0) is None


def test_burst_sets_larger_than_the_bench_set_are_not_staged_past_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A generator whose sizes follow the seed may draw sets far larger than the bench's: the worker
    counts what it draws and gives up the staged sets once they pass the burst's budget."""
    monkeypatch.setattr(worker_mod, "BURST_BYTES", 64 * 1024)
    bench = Bench(KernelRunner(lambda x, out: torch.mul(x, 2.0, out=out), True, [((8,), torch.float32)], CPU),
                  [torch.zeros(8)], CPU, 0)  # fmt: skip

    def draw(wl: object, seed: int, scale: float) -> list[torch.Tensor]:
        return [torch.zeros(8 if seed % 2 else 8192)]  # 32 KiB on even seeds

    worker = SimpleNamespace(benches={0: bench}, device=CPU, op=SimpleNamespace(workloads=[None]),
                             factory=SimpleNamespace(make=draw), sync=lambda: None)  # fmt: skip
    assert Worker.burst_inputs(worker, {"wl": 0, "reps": 40, "salt": 3}) == {"sets": 0}  # type: ignore[arg-type]
    assert bench.burst_sets == []
    monkeypatch.setattr(worker_mod, "BURST_BYTES", 64 << 20)
    assert Worker.burst_inputs(worker, {"wl": 0, "reps": 40, "salt": 3}) == {"sets": 40}  # type: ignore[arg-type]
