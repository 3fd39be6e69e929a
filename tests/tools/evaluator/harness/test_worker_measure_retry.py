"""A timing loop that runs the device out of memory is run once more with the worker's other benches
parked and the cache handed back (worker.Worker._measure): on the H200 an attention backward's timing
asked for 11 GiB beside 16 GiB of earlier graph pools and 18 GiB of unusable cache (round 20), the
harness's own holdings, not the kernel's. A call that runs out of memory again fails as before."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from aka_graph.tools.evaluator.harness.bench import Bench
from aka_graph.tools.evaluator.harness.runner import KernelRunner, digest
from aka_graph.tools.evaluator.harness.worker import Worker, with_room

CPU = torch.device("cpu")


def _bench(kernel, seed: int) -> Bench:
    def draw() -> list[torch.Tensor]:
        return [torch.randn(64, generator=torch.Generator().manual_seed(seed))]

    return Bench(KernelRunner(kernel, True, [((64,), torch.float32)], CPU), draw(), CPU, 0, regenerate=draw)


def _failing(times: int):
    """A kernel whose 3rd to (2 + times)th calls raise the device's out-of-memory error."""
    calls = [0]

    def kernel(x: torch.Tensor, out: torch.Tensor) -> None:
        calls[0] += 1
        if 3 <= calls[0] < 3 + times:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 11.10 GiB")
        torch.mul(x, 2.0, out=out)

    return kernel, calls


def test_an_out_of_memory_loop_is_measured_again_with_the_other_benches_parked() -> None:
    kernel, calls = _failing(1)
    other, bench = _bench(lambda x, out: torch.mul(x, 3.0, out=out), 1), _bench(kernel, 2)
    worker = SimpleNamespace(benches={0: other, 1: bench}, device=CPU)
    timing = Worker._measure(worker, bench)  # type: ignore[arg-type]
    assert timing.latency_us > 0 and timing.samples_us
    assert other.parked is not None and bench.parked is None
    assert calls[0] > 3  # the second loop ran the kernel


def test_a_loop_that_runs_out_of_memory_twice_fails_with_the_error() -> None:
    kernel, _ = _failing(1000)
    bench = _bench(kernel, 2)
    with pytest.raises(torch.OutOfMemoryError):
        Worker._measure(SimpleNamespace(benches={1: bench}, device=CPU), bench)  # type: ignore[arg-type]


def test_any_other_error_is_not_retried() -> None:
    calls = [0]

    def kernel(x: torch.Tensor, out: torch.Tensor) -> None:
        calls[0] += 1
        if calls[0] >= 2:
            raise RuntimeError("an illegal memory access was encountered")
        torch.mul(x, 2.0, out=out)

    bench = _bench(kernel, 2)
    with pytest.raises(RuntimeError, match="illegal memory access"):
        Worker._measure(SimpleNamespace(benches={1: bench}, device=CPU), bench)  # type: ignore[arg-type]
    assert calls[0] == 2


def test_a_new_bench_whose_first_call_runs_out_of_memory_is_made_again_with_the_others_parked() -> None:
    """Round 22 on the H200 (055 audio encoder): the largest workload's new bench ran out of memory on its
    first call beside the last workload's 57 GiB of graph pool; making a bench is retried as a loop is."""
    warm = [0]

    def first_call_fails(x: torch.Tensor, out: torch.Tensor) -> None:
        warm[0] += 1
        if warm[0] == 1:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 13.41 GiB")
        torch.mul(x, 2.0, out=out)

    other = _bench(lambda x, out: torch.mul(x, 3.0, out=out), 1)
    benches = {0: other}
    made = with_room(lambda: _bench(first_call_fails, 2), benches, CPU)
    assert made.parked is None and warm[0] == 2
    assert other.parked is not None  # parked only because the first try ran out of memory
    untouched = _bench(lambda x, out: torch.mul(x, 3.0, out=out), 3)
    with_room(lambda: _bench(lambda x, out: torch.mul(x, 2.0, out=out), 4), {0: untouched}, CPU)
    assert untouched.parked is None


def test_a_revalidation_that_runs_out_of_memory_is_run_again_and_the_timed_calls_outputs_stay() -> None:
    """Round 25 on the H200 (025 MoE backward, its own reference): the re-validation's eager call asked for
    an 8 GiB weight gradient beside 16 GiB of this process's cache in fragments, and the operator's own
    reference got RUNTIME_ERROR. The re-validation is retried as a loop is; the outputs the timed calls
    kept for the parent's checks are not dropped by it."""
    fail_next = [False]

    def kernel(x: torch.Tensor, out: torch.Tensor) -> None:
        if fail_next[0]:
            fail_next[0] = False
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB")
        torch.mul(x, 2.0, out=out)

    other, bench = _bench(lambda x, out: torch.mul(x, 3.0, out=out), 1), _bench(kernel, 2)
    bench.kept = {0: ["the output timed call 0 kept"]}
    fresh = [torch.randn(64)]
    worker = SimpleNamespace(
        benches={0: other, 1: bench},
        device=CPU,
        op=SimpleNamespace(workloads=[None, None]),
        factory=SimpleNamespace(make=lambda wl, seed, scale: [t.clone() for t in fresh]),
        contract={"mutated": []},
    )
    worker._revalidate = lambda *a: Worker._revalidate(worker, *a)  # type: ignore[arg-type]
    said: list[str] = []
    fail_next[0] = True  # the re-validation's first call runs out of memory
    reval = Worker._revalidate_with_room(worker, 1, bench, [5, 1.0], said)  # type: ignore[arg-type]
    assert torch.equal(reval["reval_outputs"][0], fresh[0] * 2.0) and not reval["violations"]
    assert not fail_next[0] and "ran out of device memory" in said[0]
    assert bench.kept == {0: ["the output timed call 0 kept"]} and other.parked is not None


def test_a_calls_returned_outputs_are_let_go_before_the_next_call_of_its_copy() -> None:
    """Round 25 on the H200 (025 MoE backward): the re-validation's call ran out of memory twice while the
    bench still held the ~32 GiB of gradients the copy's last call returned. Nothing of the harness holds
    them when the next call of the copy allocates its own."""
    import gc
    import weakref

    last: list[weakref.ref] = []
    alive_at_call: list[bool] = []

    def kernel(x: torch.Tensor) -> torch.Tensor:
        gc.collect()
        alive_at_call.append(bool(last) and last[-1]() is not None)
        y = x * 2.0
        last.append(weakref.ref(y))
        return y

    bench = Bench(KernelRunner(kernel, False, [((64,), torch.float32)], CPU), [torch.randn(64)], CPU, 0)
    bench.kept = {}
    got = bench.call(0)
    del got
    bench.call(0)
    assert alive_at_call and alive_at_call[-1] is False
    assert torch.equal(bench.outputs_of(0)[0], bench.copies[0][0] * 2.0)  # the last call's, still held


def _revalidating_worker(bench: Bench, draw) -> SimpleNamespace:
    worker = SimpleNamespace(
        benches={0: bench},
        device=CPU,
        op=SimpleNamespace(workloads=[None]),
        factory=SimpleNamespace(make=draw),
        contract={"mutated": []},
    )
    worker._revalidate = lambda *a: Worker._revalidate(worker, *a)  # type: ignore[arg-type]
    return worker


@pytest.mark.parametrize("large", [True, False], ids=["fingerprinted", "compared as drawn"])
def test_a_large_revalidation_set_is_let_go_before_the_call_and_mutation_is_still_found(
    monkeypatch: pytest.MonkeyPatch, large: bool
) -> None:
    """Round 25 on the H200 (025 MoE backward): beside the bench's own copy, the re-validation held the
    fresh set it had written (28 GiB) through the call, for the bit-exact mutation check, and the call had
    no room left for its gradients. Above the memory plan's clone limit the set is now fingerprinted and
    let go; a write into an input is found either way."""
    import gc
    import weakref

    from aka_graph.tools.evaluator.harness import worker as worker_mod

    monkeypatch.setattr(worker_mod, "SMALL_BYTES", 0 if large else 1 << 30)
    drawn: list[weakref.ref] = []
    revalidating, alive_in_call = [False], []

    def draw(wl: object, seed: int, scale: float) -> list[torch.Tensor]:
        t = torch.randn(64, generator=torch.Generator().manual_seed(seed))
        drawn.append(weakref.ref(t))
        return [t]

    def kernel(x: torch.Tensor, out: torch.Tensor) -> None:
        torch.mul(x, 2.0, out=out)
        if revalidating[0]:
            gc.collect()
            alive_in_call.append(drawn[-1]() is not None)
            x.add_(1.0)  # the input as scratch

    bench = Bench(KernelRunner(kernel, True, [((64,), torch.float32)], CPU), draw(None, 1, 1.0), CPU, 0)
    revalidating[0] = True
    reval = Worker._revalidate(_revalidating_worker(bench, draw), 0, bench, 7, 1.0)  # type: ignore[arg-type]
    assert alive_in_call == [not large]  # the fresh set let go before the call only where large
    assert reval["violations"] == ["input 0 was modified during the timed invocation"]
    assert reval["reval_digest"] == digest(draw(None, 7, 1.0))  # what was drawn, not what the call left
