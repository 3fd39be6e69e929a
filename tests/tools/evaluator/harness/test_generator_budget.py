"""The fresh timed input sets of an eager timing round are capped by what the operator's own generator
takes to draw them (memory.generator_sets): about 2 s of drawing per round, never fewer than 5 sets.

Why: some public generators fill a tensor one element at a time in a Python loop (034 vision-language
cross attention, ~25 k GPU scalar writes a set); 30 sets per round put that problem past a 200 s limit on
the H200 (round 20). The parent measures the draws it makes itself (trusted.Reference.inputs), sends the
figure with the timing request, and holds the worker to the count it gives (spotcheck.pool_shortfall)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from aka_graph.tools.evaluator.harness import memory, spotcheck
from aka_graph.tools.evaluator.harness.bench import Bench
from aka_graph.tools.evaluator.harness.loading import load_operator
from aka_graph.tools.evaluator.harness.memory import SMALL_BYTES, fresh_sets, generator_sets
from aka_graph.tools.evaluator.harness.runner import KernelRunner
from aka_graph.tools.evaluator.harness.spotcheck import pool_shortfall
from aka_graph.tools.evaluator.harness.trusted import Reference
from aka_graph.tools.evaluator.harness.worker import Worker
from tests.conftest import REPO_ROOT

SLOW = REPO_ROOT / "tests" / "fixtures" / "sol" / "slow_elementwise_generator"
CPU = torch.device("cpu")


@pytest.mark.parametrize(
    ("generation_s", "sets"),
    [(None, 1 << 30), (0.0, 1 << 30), (0.001, 2000), (0.1, 20), (0.5, 5), (3.0, 5)],
)
def test_a_generator_draws_about_two_seconds_of_sets_and_never_fewer_than_five(
    generation_s: float | None, sets: int
) -> None:
    assert generator_sets(generation_s) == sets


@pytest.mark.parametrize(
    ("device", "generation_s", "sets"),
    [("cuda", None, 30), ("cuda", 0.01, 30), ("cuda", 0.1, 20), ("cuda", 0.5, 5), ("cpu", 0.5, 5)],
)
def test_a_rounds_fresh_sets_are_the_fewest_of_memory_the_timed_calls_and_the_generator(
    device: str, generation_s: float | None, sets: int
) -> None:
    assert fresh_sets(1 << 20, SMALL_BYTES, device, generation_s) == sets


def test_the_parent_keeps_the_fastest_draw_of_each_workloads_inputs() -> None:
    """The fixture's generator loops over its grid and sleeps 50 ms (what the loop costs at a public
    problem's sizes); the first draw of a generator may compile, so the fastest one counts."""
    reference = Reference(load_operator(SLOW), CPU, 3)
    assert reference.generation_s == {}
    reference.inputs(0, 1, 1.0)
    first = reference.generation_s[0]
    reference.inputs(0, 2, 1.0)
    assert 0.05 <= reference.generation_s[0] <= first
    assert generator_sets(reference.generation_s[0]) <= 40  # no more than ~2 s of its draws per round


def test_the_parent_holds_the_worker_to_the_count_its_request_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(spotcheck.gpu_neighbours, "sharing", lambda device: False)
    session = SimpleNamespace(set_bytes={0: 1 << 20}, device=torch.device("cuda"))
    assert pool_shortfall(session, 0, 5, 0.5) is None  # the generator's cap, as sent
    assert pool_shortfall(session, 0, 30, None) is None  # a fast generator: one set per timed call
    found = pool_shortfall(session, 0, 2, 0.5)
    assert found is not None and "on 2 fresh input sets where 5 fit" in found
    assert pool_shortfall(session, 0, 5, None) is not None  # a cap the request never gave


def test_the_worker_draws_no_more_sets_than_the_request_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a host a round wants 5 sets, the cap's floor: lowered here to see the worker follow the figure."""
    monkeypatch.setattr(memory, "MIN_GENERATED_SETS", 2)
    draws: list[int] = []

    def make(wl: object, seed: int, scale: float) -> list[torch.Tensor]:
        draws.append(seed)
        return [torch.randn(64)]

    runner = KernelRunner(lambda x, out: torch.mul(x, 2.0, out=out), True, [((64,), torch.float32)], CPU)
    bench = Bench(runner, [torch.randn(64)], CPU, 0)
    factory = SimpleNamespace(make=make)
    op = SimpleNamespace(workloads=[object()])
    worker = SimpleNamespace(op=op, factory=factory, device=CPU, contract={})
    Worker._fresh_pool(worker, 0, bench, 7, generation_s=1.0)  # type: ignore[arg-type]
    assert len(bench.pool) == 2
    Worker._fresh_pool(worker, 0, bench, 7, generation_s=None)  # type: ignore[arg-type]
    assert len(bench.pool) == 5
    assert draws == []  # drawn only when a timed call needs one (FreshSets)
