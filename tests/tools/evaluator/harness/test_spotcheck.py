"""The parent's hold on the worker's count of fresh timed input sets (spotcheck.pool_shortfall).

The worker reports how many fresh input sets its eagerly timed calls used, and 0 means "nothing to
verify". Code in the worker's process that edits its reply (red team round 7: bytecode shipped without
source reached the harness's objects) could switch the timed calls' verification off that way; where
the sets are small enough that memory cannot have limited them, the parent holds the count to what
`memory.fresh_sets` gives.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from aka_graph.tools.evaluator.harness import gpu_neighbours
from aka_graph.tools.evaluator.harness.bench import Bench
from aka_graph.tools.evaluator.harness.inputs import output_shapes
from aka_graph.tools.evaluator.harness.layout import value_bytes
from aka_graph.tools.evaluator.harness.memory import TIMED_SETS, fresh_sets
from aka_graph.tools.evaluator.harness.runner import KernelRunner
from aka_graph.tools.evaluator.harness.session import Session, Settings
from aka_graph.tools.evaluator.harness.spotcheck import HELD_BYTES, burst_draws, pool_shortfall
from tests.conftest import REPO_ROOT


def _session(nbytes: int, device: str = "cpu") -> SimpleNamespace:
    return SimpleNamespace(set_bytes={0: nbytes}, device=torch.device(device))


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_small_inputs_are_held_to_one_fresh_set_per_timed_call(device: str) -> None:
    session = _session(64 << 10, device)
    assert pool_shortfall(session, 0, TIMED_SETS[device]) is None
    for edited in (0, 1, TIMED_SETS[device] - 1):
        message = pool_shortfall(session, 0, edited)
        assert message is not None and f"on {edited} fresh input sets" in message


def test_inputs_large_enough_for_memory_to_limit_them_keep_the_workers_count() -> None:
    assert pool_shortfall(_session(2 * HELD_BYTES), 0, 0) is None
    assert pool_shortfall(_session(64 << 10), 1, 0) is None  # a workload whose inputs were never drawn


def test_on_a_gpu_other_processes_hold_the_workers_count_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    """Round 16: 8 evaluations on one H200; an honest reference's worker found no memory for its 30
    small sets (the others held it) and the parent called the report edited."""
    monkeypatch.setattr(gpu_neighbours, "others_on_gpu", lambda own, uuid: 7)
    assert pool_shortfall(_session(64 << 10, "cuda"), 0, 0) is None
    assert pool_shortfall(_session(64 << 10, "cpu"), 0, 0) is not None  # on a host the count is held
    monkeypatch.setattr(gpu_neighbours, "others_on_gpu", lambda own, uuid: 0)
    assert pool_shortfall(_session(64 << 10, "cuda"), 0, 0) is not None


def test_the_parent_counts_a_fresh_set_as_the_worker_does_inputs_and_kept_outputs() -> None:
    """Round 18 on the H200: a workload with 7.2 MiB of inputs and 29 MiB of outputs. The worker, which
    keeps every timed call's outputs, made 29 sets (1 GiB / 36.9 MiB); the parent, counting the inputs
    alone, expected 30 and called the honest reference REWARD_HACK. Both now count a set the same way."""
    op_dir = REPO_ROOT / "tests" / "fixtures" / "sol" / "kv_cache_inplace"
    session = Session(Settings(op_dir=op_dir, device="cpu"))
    idx = session.indices[0]
    session.reference_outputs(idx)
    wl = session.op.workloads[idx]
    worker_side = KernelRunner(
        session.reference.module.run, False, output_shapes(session.op, wl), torch.device("cpu")
    )
    first = session.reference.inputs(idx, 7, 1.0)
    bench = Bench(worker_side, first, torch.device("cpu"), 0)
    assert session.set_bytes[idx] == bench.nbytes > value_bytes(first)


def test_a_set_is_limited_by_its_outputs_as_well() -> None:
    """The numbers of round 18's workload: 29 sets fit in the pool's gigabyte on an idle H200, and sets
    that large may be limited by a worker's spare memory, so the parent takes the worker's count."""
    inputs, outputs = 7_526_912, 29_360_128
    assert fresh_sets(inputs + outputs, 100 << 30, "cuda") == 29
    assert fresh_sets(inputs, 100 << 30, "cuda") == TIMED_SETS["cuda"] == 30
    assert pool_shortfall(_session(inputs + outputs, "cuda"), 0, 29) is None


@pytest.mark.parametrize(
    ("nbytes", "reps", "draws"),
    [
        (64 << 10, 200, 12),  # a small call: a dozen checks cost milliseconds
        (HELD_BYTES, 200, 12),
        (HELD_BYTES + 1, 200, 5),  # a large one: five
        (64 << 10, 7, 7),  # never more than the burst made
        (None, 200, 5),  # size unknown: five
    ],
)
def test_a_burst_of_small_calls_is_checked_a_dozen_times(nbytes: int | None, reps: int, draws: int) -> None:
    """A kernel telling burst calls by their rhythm skips only some of them on a loaded host: where a
    check is cheap, enough are drawn that skipping a third escapes less than 1 % of the time."""
    session = SimpleNamespace(set_bytes={} if nbytes is None else {0: nbytes}, device=torch.device("cpu"))
    assert burst_draws(session, 0, reps) == draws
