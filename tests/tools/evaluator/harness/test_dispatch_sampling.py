"""A timing loop's per-sample steps compare torch's dispatch tables at its first step and 1 time in 4
after it (guards.dispatch_due); every other between-step check runs at every step.

Why sampled: the dump of the ~210 watched tables costs ~5 ms, and an event-timed workload makes two such
steps per sample; on the H200 it was 40 % of some real problems' evaluation. These tests hold what the
sampling must keep: a kernel registered for an aten op the harness runs before timing is named at the
loop's first step whatever the draw, and one registered in the middle of the loop is named within it."""

from __future__ import annotations

import pytest
import torch

from aka_graph.tools.evaluator.harness import guards
from aka_graph.tools.evaluator.harness.bench import Bench
from aka_graph.tools.evaluator.harness.guards import Sentinel, dispatch_due
from aka_graph.tools.evaluator.harness.runner import KernelRunner

CPU = torch.device("cpu")
COPY_HOOK = "torch's dispatch of aten::copy_ was changed"


def _bench(kernel) -> Bench:
    bench = Bench(KernelRunner(kernel, True, [((64,), torch.float32)], CPU), [torch.randn(64)], CPU, 0)
    bench.use_pool([[torch.randn(64)] for _ in range(4)])  # fresh sets per sample, as the worker times
    return bench


def _steps(bench: Bench, n: int) -> None:
    """`n` samples' untimed steps as a timing loop makes them (bench.measure: perturb, then keep)."""
    bench._sampled_steps = 0
    for i in range(n):
        bench.perturb(i)
        bench.call(i % len(bench.copies))
        bench.keep(i)


def test_the_draw_is_always_true_at_a_loops_first_step_and_about_one_in_four_after() -> None:
    assert all(dispatch_due(first=True) for _ in range(200))
    share = sum(dispatch_due(first=False) for _ in range(8000)) / 8000
    assert 0.2 < share < 0.3, share


def test_between_steps_without_the_tables_leaves_out_only_the_tables() -> None:
    sentinel = Sentinel()
    lib = torch.library.Library("aten", "IMPL")
    try:
        lib.impl("copy_", lambda self, src, non_blocking=False: self, "AutogradCPU")
        without = sentinel.between_steps(dispatch=False)
        assert not [f for f in without if "dispatch" in f], without
        assert any(COPY_HOOK in f for f in sentinel.between_steps(dispatch=True))
    finally:
        lib._destroy()


def test_a_registration_made_before_the_loop_is_named_at_its_first_step_whatever_the_draw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(guards.os, "urandom", lambda n: b"\xff" * n)  # the draw never picks a later step
    bench = _bench(lambda x, out: torch.mul(x, 2.0, out=out))
    sentinel = Sentinel()
    lib = torch.library.Library("aten", "IMPL")
    try:
        lib.impl("copy_", lambda self, src, non_blocking=False: self, "AutogradCPU")
        assert sentinel is guards._CURRENT[0]
        _steps(bench, 3)
        assert any(COPY_HOOK in v for v in bench.violations), bench.violations
    finally:
        lib._destroy()
        guards._CURRENT.clear()


def test_a_registration_made_by_a_timed_call_in_the_middle_of_the_loop_is_named_within_it() -> None:
    """Registered on the kernel's 4th call and kept: 75 later steps, each compared 1 time in 4; the odds of
    missing it all are (3/4)^75 ~ 4e-10."""
    libs: list[torch.library.Library] = []
    calls = [0]

    def late(x: torch.Tensor, out: torch.Tensor) -> None:
        calls[0] += 1
        if calls[0] == 4:
            lib = torch.library.Library("aten", "IMPL")
            lib.impl("copy_", lambda self, src, non_blocking=False: self, "AutogradCPU")
            libs.append(lib)
        torch.mul(x, 2.0, out=out)

    bench = _bench(late)
    Sentinel()
    try:
        _steps(bench, 40)  # the set-up's call was the first: the loop's 3rd call registers it
        assert any(COPY_HOOK in v for v in bench.violations), bench.violations
    finally:
        for lib in libs:
            lib._destroy()
        guards._CURRENT.clear()
