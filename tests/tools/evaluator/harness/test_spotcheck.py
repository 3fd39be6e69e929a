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
from aka_graph.tools.evaluator.harness.memory import TIMED_SETS
from aka_graph.tools.evaluator.harness.spotcheck import HELD_BYTES, pool_shortfall


def _session(nbytes: int, device: str = "cpu") -> SimpleNamespace:
    return SimpleNamespace(input_bytes={0: nbytes}, device=torch.device(device))


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
