"""The reference timed on a kernel's own timed sets on a GPU (trusted.Reference.time_on_sets), as the worker
timed the kernel: calls that could not be captured by the worker's CUDA-event loop (timing.time_events), set
j of the round drawn from `timed_seed(pool seed, j)` before call j, untimed, one set alive at a time; a CUDA
graph's rounds by the reference's own graph over copies holding the same sets, or, where the reference
cannot be captured, a call per set and their mean. The event loop and the bench are replaced here by ones
that record what they are given (a GPU test runs the real ones: tests/gpu/test_seed_shaped_gpu.py)."""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
import torch

from aka_graph.tools.evaluator.harness import trusted
from aka_graph.tools.evaluator.harness.timing import TimedSets, Timing, timed_seed

L2 = 50 << 20
BENCH_SEED = 77


class _SetsSeen:
    """The reference's side: which seeds were drawn, which set each call ran on, how many sets were alive at
    once (a large operator's sets must never pile up on the device)."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.alive: set[int] = set()
        self.most_alive = 0

    def inputs(self, idx: int, seed: int, scale: float) -> list[Any]:
        assert scale == 1.0  # the sets as the kernel's were drawn, never scaled
        self.events.append(f"draw {seed}")
        self.alive.add(seed)
        self.most_alive = max(self.most_alive, len(self.alive))
        return [_Set(seed, self)]

    def invoke(self, inputs: list[Any]) -> list[Any]:
        self.events.append(f"call {inputs[0].seed}")
        return []


class _Set:
    def __init__(self, seed: int, seen: _SetsSeen) -> None:
        self.seed, self.seen = seed, seen

    def __del__(self) -> None:
        self.seen.alive.discard(self.seed)


def fake_events(per_set_us: dict[int, float]) -> Any:
    """timing.time_events as the reference calls it: prepare(i), then the call, for each of `samples`; a
    call's latency is its set's (by the set the call ran on)."""

    def time_events(call: Any, n_copies: int, l2_bytes: int, samples: int, prepare: Any) -> Timing:
        assert n_copies == 1 and l2_bytes == L2
        data = []
        for i in range(samples):
            prepare(i)
            call(i % n_copies)
            data.append(per_set_us.get(i, 1.0))
        return Timing(statistics.median(data), 0.0, data, "cuda_event")

    return time_events


class _FakeBench:
    """trusted.Bench: made from the bench's set; records the sets written into its copies."""

    made: ClassVar[list[_FakeBench]] = []
    capturable = True

    def __init__(self, runner: Any, first: list[Any], device: Any, l2_bytes: int, regenerate: Any) -> None:
        self.first, self.copies, self.written = first[0].seed, [None] * 3, []
        self.graph = object() if self.capturable else None
        self.parked = False
        _FakeBench.made.append(self)

    def write_inputs(self, k: int, values: list[Any], seed: int) -> None:
        assert values[0].seed == seed
        self.written.append((k, seed))

    def measure(self) -> Timing:
        return Timing(7.0, 1.0, [7.0, 7.0], "cuda_graph")

    def park(self) -> None:
        self.parked = True


def gpu_reference(seen: _SetsSeen, monkeypatch: pytest.MonkeyPatch, capturable: bool = True) -> Any:
    monkeypatch.setattr(trusted, "park_large", lambda device: seen.events.append("park"))
    monkeypatch.setattr(_FakeBench, "made", [])
    monkeypatch.setattr(_FakeBench, "capturable", capturable)
    monkeypatch.setattr(trusted, "Bench", _FakeBench)
    ref = SimpleNamespace(
        runner=lambda idx: SimpleNamespace(invoke=seen.invoke),
        inputs=seen.inputs,
        device=torch.device("cuda"),
        uncapturable=set(),
    )
    ref._gpu_round = lambda *a: trusted.Reference._gpu_round(ref, *a)  # type: ignore[arg-type]
    return ref


def test_each_event_timed_call_of_the_reference_runs_on_the_kernels_set_of_that_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = _SetsSeen()
    monkeypatch.setattr(trusted, "time_events", fake_events({0: 10.0, 1: 30.0, 2: 20.0, 3: 20.0}))
    ref = gpu_reference(seen, monkeypatch)
    rounds = [TimedSets(5, 3), TimedSets(8, 2), TimedSets(9, 4)]
    timing = trusted.Reference.time_on_sets(ref, 0, rounds, L2, BENCH_SEED)  # type: ignore[arg-type]
    first = timed_seed(5, 0)
    expected = ["draw " + str(first), "call " + str(first)]
    for r in rounds:
        expected.append("park")
        for j in range(r.count):
            expected += [f"draw {timed_seed(r.seed, j)}", f"call {timed_seed(r.seed, j)}"]
    assert seen.events == expected and _FakeBench.made == []
    assert seen.most_alive == 1  # the last set went before the next was drawn
    # the rounds' medians: 20 (10, 30, 20), 20 (10, 30), 20 (10, 30, 20, 20); their median
    assert timing.latency_us == 20.0 and timing.method == "cuda_event"
    assert len(timing.samples_us) == 9 and trusted.OWN_SETS_NOTE in timing.notes


def test_a_graph_round_has_the_reference_captured_over_copies_holding_the_kernels_sets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As worker._fresh_graph_copies made the kernel's: a bench from the bench's set, then set k (of the
    round's pool seed) written into copy k; the bench's own graph then times them."""
    seen = _SetsSeen()
    monkeypatch.setattr(trusted, "time_events", lambda *a, **k: pytest.fail("a capturable reference"))
    ref = gpu_reference(seen, monkeypatch)
    timing = trusted.Reference.time_on_sets(ref, 0, [TimedSets(5, 3, rotated=True)], L2, BENCH_SEED)  # type: ignore[arg-type]
    (bench,) = _FakeBench.made
    assert bench.first == BENCH_SEED and bench.parked
    assert bench.written == [(k, timed_seed(5, k)) for k in range(3)]
    assert timing.latency_us == 7.0 and timing.method == "cuda_graph"


def test_an_uncapturable_reference_in_a_graph_round_is_the_mean_of_a_call_per_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A graph's replay is a mean over its copies' sets: one long set of four weighs a quarter, which a
    median over single calls would drop (the kernel then read up to 2x faster than the reference)."""
    seen = _SetsSeen()
    monkeypatch.setattr(trusted, "time_events", fake_events({0: 10.0, 1: 10.0, 2: 50.0, 3: 10.0}))
    ref = gpu_reference(seen, monkeypatch, capturable=False)
    rounds = [TimedSets(5, 4, rotated=True), TimedSets(6, 4, rotated=True)]
    timing = trusted.Reference.time_on_sets(ref, 0, rounds, L2, BENCH_SEED)  # type: ignore[arg-type]
    assert len(_FakeBench.made) == 1 and ref.uncapturable == {0}  # tried once, not again next round
    assert timing.latency_us == 20.0 and timing.method == "cuda_event"
    assert seen.most_alive <= 2  # the bench's set (parked at once), then one set at a time


def test_a_round_of_graph_copies_beside_one_of_events_is_said_to_be_timed_by_the_graph(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = _SetsSeen()
    monkeypatch.setattr(trusted, "time_events", fake_events({}))
    ref = gpu_reference(seen, monkeypatch)
    rounds = [TimedSets(5, 2), TimedSets(6, 3, rotated=True)]
    timing = trusted.Reference.time_on_sets(ref, 0, rounds, L2, BENCH_SEED)  # type: ignore[arg-type]
    assert timing.method == "cuda_graph" and timing.latency_us == 4.0  # the median of 1.0 and 7.0


@contextlib.contextmanager
def ticking_clock(step_ns: int) -> Iterator[Any]:
    """host_reference_timing's clock, each reading `step_ns` after the last."""
    now = iter(range(0, 1 << 40, step_ns))
    yield lambda: next(now)


def test_on_a_host_the_reference_keeps_its_own_clock_and_never_uses_cuda_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = _SetsSeen()
    monkeypatch.setattr(trusted, "time_events", lambda *a, **k: pytest.fail("CUDA events on a host"))
    monkeypatch.setattr(trusted, "flush_host_caches", lambda: seen.events.append("flush"))
    monkeypatch.setattr(trusted, "host_reference_timing", lambda: ticking_clock(2500))
    ref = SimpleNamespace(
        runner=lambda idx: SimpleNamespace(invoke=seen.invoke), inputs=seen.inputs, device=torch.device("cpu")
    )
    ref._host_round = lambda *a: trusted.Reference._host_round(ref, *a)  # type: ignore[arg-type]
    timing = trusted.Reference.time_on_sets(ref, 0, [TimedSets(5, 2)], 0, None)  # type: ignore[arg-type]
    first, second = timed_seed(5, 0), timed_seed(5, 1)
    assert seen.events == [f"draw {first}", f"call {first}", f"draw {first}", "flush", f"call {first}",
                           f"draw {second}", "flush", f"call {second}"]  # fmt: skip
    assert timing.method == "host_interpreter" and timing.samples_us == [2.5, 2.5]  # one tick a call, in us
    assert timing.latency_us == 2.5 and seen.most_alive == 1
