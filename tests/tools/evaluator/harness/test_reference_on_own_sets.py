"""The reference timed on a kernel's own timed sets on a GPU (trusted.Reference.time_on_sets): the same
CUDA-event loop the worker's uncapturable calls ran in (timing.time_events), with set j of the round drawn
from `timed_seed(pool seed, j)` before call j, untimed, one set alive at a time. The event loop itself is
replaced here by one that records what it is given (a GPU test runs the real one:
tests/gpu/test_seed_shaped_gpu.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch

from aka_graph.tools.evaluator.harness import trusted
from aka_graph.tools.evaluator.harness.timing import Timing, timed_seed


class _SetsSeen:
    """The reference's side of the loop: which seeds were drawn, which set each call ran on, and how many
    sets were alive at once (a large operator's sets must never pile up on the device)."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.alive: set[int] = set()
        self.most_alive = 0

    def inputs(self, idx: int, seed: int, scale: float) -> list[Any]:
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


def fake_events(latencies: dict[int, float]) -> Any:
    """timing.time_events as the reference calls it: prepare(i), then the call, for each of `samples`;
    each round's latency from `latencies` by its number of calls."""

    def time_events(call: Any, n_copies: int, l2_bytes: int, samples: int, prepare: Any) -> Timing:
        assert n_copies == 1 and l2_bytes == 50 << 20
        for i in range(samples):
            prepare(i)
            call(i % n_copies)
        value = latencies[samples]
        return Timing(value, 0.0, [value] * samples, "cuda_event")

    return time_events


def test_on_a_gpu_each_timed_call_of_the_reference_runs_on_the_kernels_set_of_that_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = _SetsSeen()
    monkeypatch.setattr(trusted, "time_events", fake_events({3: 10.0, 2: 30.0, 4: 20.0}))
    monkeypatch.setattr(trusted, "park_large", lambda device: seen.events.append("park"))
    ref = SimpleNamespace(
        runner=lambda idx: SimpleNamespace(invoke=seen.invoke),
        inputs=seen.inputs,
        device=torch.device("cuda"),
    )
    ref._events_on_sets = lambda *a: trusted.Reference._events_on_sets(ref, *a)  # type: ignore[arg-type]
    timing = trusted.Reference.time_on_sets(ref, 0, [(5, 3), (8, 2), (9, 4)], 50 << 20)  # type: ignore[arg-type]
    first = timed_seed(5, 0)
    rounds = [
        f"draw {timed_seed(p, j)}|call {timed_seed(p, j)}"
        for p, n in [(5, 3), (8, 2), (9, 4)]
        for j in range(n)
    ]
    assert seen.events == ["park", f"draw {first}", f"call {first}", *"|".join(rounds).split("|")]
    assert seen.most_alive == 1  # the last set went before the next was drawn
    assert timing.latency_us == 20.0 and timing.method == "cuda_event"  # the median of the rounds' figures
    assert len(timing.samples_us) == 9 and trusted.OWN_SETS_NOTE in timing.notes


def test_on_a_host_the_reference_keeps_its_own_clock_and_never_uses_cuda_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = _SetsSeen()
    monkeypatch.setattr(trusted, "time_events", lambda *a, **k: pytest.fail("CUDA events on a host"))
    monkeypatch.setattr(trusted, "flush_host_caches", lambda: None)
    ref = SimpleNamespace(
        runner=lambda idx: SimpleNamespace(invoke=seen.invoke), inputs=seen.inputs, device=torch.device("cpu")
    )
    timing = trusted.Reference.time_on_sets(ref, 0, [(5, 2)])  # type: ignore[arg-type]
    assert timing.method == "host_interpreter" and len(timing.samples_us) == 2
    assert seen.most_alive == 1
