"""Which rotated copies of a timed CUDA graph the parent verifies after the fact (graphcheck.py). The
verification itself runs on the GPU (tests/gpu/test_adversarial_gpu.py)."""

from __future__ import annotations

import random

from aka_graph.tools.evaluator.harness.graphcheck import VERIFIED_COPIES, choose_copies, verify_graph_copies


def test_copies_rewritten_by_revalidation_are_never_chosen() -> None:
    for seed in range(50):
        chosen = choose_copies(12, [0, 11], random.Random(seed))
        assert len(chosen) == VERIFIED_COPIES == len(set(chosen))
        assert all(0 < k < 11 for k in chosen)


def test_every_copy_can_be_chosen() -> None:
    rng = random.Random(1)
    seen = {k for _ in range(200) for k in choose_copies(40, [0, 39], rng)}
    assert seen == set(range(1, 39))


def test_few_copies_are_all_checked() -> None:
    assert choose_copies(3, [2]) == [0, 1]
    assert choose_copies(1, [0]) == []


def test_nothing_is_asked_of_a_worker_whose_timing_was_no_graph() -> None:
    """Host and CUDA-event timing are verified per timed call (spotcheck.py); no request is made here."""

    class NoCalls:
        def __init__(self) -> None:
            self.contract: dict[str, list[int]] = {}

        def request(self, *_: object) -> None:
            raise AssertionError("no request expected")

    assert verify_graph_copies(NoCalls(), NoCalls(), 0, {"method": "cuda_event", "graph_fresh": 8}, 1) is None
    assert verify_graph_copies(NoCalls(), NoCalls(), 0, {"method": "cuda_graph", "graph_fresh": 0}, 1) is None
