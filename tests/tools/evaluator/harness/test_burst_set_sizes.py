"""A burst of larger sets than a round's timed calls drew (spotcheck.set_scale): for an operator whose own
generator decides what each set holds, a round's few timed calls may all draw the usual sets while the
burst's many calls draw rare large ones too. Red team round 25's bimodal batch (a prefill of 256 times the
rows on one seed in three) had its five timed calls all short one round in eight, and an honest kernel was
called REWARD_HACK after three such rounds in round 28's clean-clone CI. The burst is then held against
the round's figure scaled by the sets' sizes, which the parent draws itself; work hidden from the timed
calls still shows."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from aka_graph.tools.evaluator.harness import spotcheck
from aka_graph.tools.evaluator.harness.plausibility import HOST_TOLERANCE, BurstInputs, check, round_trip_ns
from aka_graph.tools.evaluator.harness.spotcheck import set_scale
from aka_graph.tools.evaluator.harness.timing import TimedSets, timed_seed


class BurstOfLargerSets:
    """A worker whose burst calls take `burst_us` each (their sets are larger), answering like the worker."""

    def __init__(self, burst_us: float) -> None:
        self.burst_us = burst_us
        self.bursts = 0

    def __call__(self, msg: dict[str, Any]) -> dict[str, Any]:
        if msg["cmd"] == "burst":
            self.bursts += 1
            work = self.burst_us if msg["part"] == "all" else 0.0
            time.sleep(msg["reps"] * work / 1e6)
        return {}


def inputs_scaled(scale: float, verified: list[int], notes: list[str] | None = None) -> BurstInputs:
    told = notes.append if notes is not None else (lambda text: None)
    return BurstInputs(
        lambda salt, reps: True, lambda salt, reps: verified.append(reps), lambda s, r: scale, told
    )


@pytest.mark.parametrize(
    ("reported_us", "scale", "flagged"),
    [
        (1000.0, 1.0, True),  # the usual sets' figure against a burst of 3x the work: disagrees
        (1000.0, 4.0, False),  # the burst's sets hold 4x the bytes: its 3x is explained
        (1000.0, 1.2, True),  # only partly larger: still 2.5x unexplained
        (250.0, 4.0, True),  # a figure a quarter of the truth (work hidden): 4x larger sets do not hide it
    ],
)
def test_a_burst_of_larger_sets_is_weighed_by_their_sizes(
    reported_us: float, scale: float, flagged: bool
) -> None:
    worker = BurstOfLargerSets(burst_us=3000.0)
    rt = round_trip_ns(worker) or (0, None)
    verified: list[int] = []
    notes: list[str] = []
    inputs = inputs_scaled(scale, verified, notes)
    found = check(worker, 0, reported_us, 1, rt, HOST_TOLERANCE, prepared=True, inputs=inputs)
    assert (found is not None and found[0] == "REWARD_HACK") is flagged, found
    assert bool(verified) is not flagged  # the burst that agreed has its outputs checked
    # a pass that rests on the weighing is said in the result, with the figures it weighed
    assert bool(notes) is (not flagged and scale > 1.0)
    if notes:
        assert f"on sets {scale:.2f}x the timed calls' sets (in bytes or in the reference's time" in notes[-1]
        assert f"against the reported {reported_us:.3f} us" in notes[-1]


def test_a_burst_that_agrees_unweighed_leaves_no_note() -> None:
    worker = BurstOfLargerSets(burst_us=1000.0)
    rt = round_trip_ns(worker) or (0, None)
    notes: list[str] = []
    inputs = inputs_scaled(4.0, [], notes)
    assert check(worker, 0, 1000.0, 1, rt, HOST_TOLERANCE, prepared=True, inputs=inputs) is None
    assert notes == []


class _Reference:
    """Sets of 1 KiB, or 256 KiB on the seeds in `large`; counts its draws. Its time a call is 100 us, or
    `heavy_us` on the seeds in `heavy` (the same bytes: a padded batch whose valid rows follow the seed);
    the sets it was timed on are kept."""

    seed_may_shape = True

    def __init__(
        self,
        large: set[int],
        generation_s: float = 0.0,
        small: int = 1,
        big: int = 256,
        heavy: set[int] | None = None,
        heavy_us: float = 100.0,
    ) -> None:
        self.large, self.drawn, self.small, self.big = large, [], small, big
        self.generation_s = {0: generation_s}
        self.heavy, self.heavy_us = heavy or set(), heavy_us
        self.timed_on: list[TimedSets] = []

    def inputs(self, idx: int, seed: int, scale: float) -> list[Any]:
        assert scale == 1.0  # the sets as the worker drew them
        self.drawn.append(seed)
        return [torch.zeros(self.big if seed in self.large else self.small, dtype=torch.uint8)]

    def time_on_sets(self, idx: int, rounds: list[TimedSets], l2_bytes: int, bench_seed: int | None) -> Any:
        assert len(rounds) == 1
        self.timed_on.append(rounds[0])
        seeds = [timed_seed(int(rounds[0].seed), j) for j in range(rounds[0].count)]  # type: ignore[arg-type]
        return SimpleNamespace(samples_us=[self.heavy_us if s in self.heavy else 100.0 for s in seeds])


def session_of(reference: _Reference) -> SimpleNamespace:
    return SimpleNamespace(reference=reference, l2_bytes=0, bench_seed=None)


def test_the_scale_is_the_bursts_mean_set_size_over_the_timed_calls() -> None:
    large = {timed_seed(7, j) for j in range(0, 30, 3)}  # every third burst set: 256x the bytes
    ref = _Reference(large)
    scale = set_scale(session_of(ref), 0, TimedSets(5, 5), 7, 30)
    assert scale == pytest.approx((20 * 1 + 10 * 256) / 30)
    assert sorted(ref.drawn) == sorted(
        [timed_seed(5, j) for j in range(5)] + [timed_seed(7, j) for j in range(30)]
    )


@pytest.mark.parametrize(
    ("timed", "seed_may_shape"),
    [
        (None, True),  # no round's sets known
        (TimedSets(None, 5), True),  # the timed calls ran on the bench's set
        (TimedSets(5, 3, rotated=True), True),  # a graph's copies (a GPU's)
        (TimedSets(5, 5), False),  # random tensors of declared shapes: every set the same size
    ],
)
def test_no_scale_where_the_sets_are_not_the_operators_own_draws(
    timed: TimedSets | None, seed_may_shape: bool
) -> None:
    ref = _Reference({timed_seed(7, 0)})
    ref.seed_may_shape = seed_may_shape
    assert set_scale(session_of(ref), 0, timed, 7, 30) == 1.0 and ref.drawn == []


def test_a_burst_of_smaller_sets_never_makes_the_check_stricter() -> None:
    ref = _Reference({timed_seed(5, j) for j in range(5)})  # the timed calls all drew large sets
    assert set_scale(session_of(ref), 0, TimedSets(5, 5), 7, 30) == 1.0


def test_a_slow_generator_has_a_sample_of_the_bursts_sets_sized() -> None:
    ref = _Reference(set(), generation_s=0.5)  # 2 s buys 4 draws: the floor of 12 burst sets holds
    assert set_scale(session_of(ref), 0, TimedSets(5, 5), 7, 100) == 1.0
    assert len(ref.drawn) == 5 + spotcheck.MIN_SIZED_SETS


def test_a_burst_a_little_larger_gets_that_little() -> None:
    large = {timed_seed(7, j) for j in range(0, 30, 15)}  # 2 of 30 burst sets: 8x the bytes
    ref = _Reference(large, small=2, big=16)
    assert set_scale(session_of(ref), 0, TimedSets(5, 5), 7, 30) == pytest.approx((28 * 2 + 2 * 16) / 30 / 2)


@pytest.mark.parametrize(("small", "big", "scale"), [(0, 0, 1.0), (0, 4, 1.0), (1, 3, 3.0)])
def test_sets_of_no_bytes_or_one_byte(small: int, big: int, scale: float) -> None:
    """Empty timed sets give no scale (nothing to divide by); a byte is a size like any other."""
    ref = _Reference({timed_seed(7, j) for j in range(30)}, small=small, big=big)
    assert set_scale(session_of(ref), 0, TimedSets(5, 5), 7, 30) == scale


@pytest.mark.parametrize(("count", "timed_draws"), [(0, 1), (1, 1), (3, 3)])
def test_the_timed_sets_sized_are_those_the_round_ran_on(count: int, timed_draws: int) -> None:
    ref = _Reference(set())
    set_scale(session_of(ref), 0, TimedSets(5, count), 7, 30)
    assert ref.drawn[:timed_draws] == [timed_seed(5, j) for j in range(timed_draws)]
    assert len(ref.drawn) == timed_draws + 30


def test_a_fast_generator_sizes_as_many_of_the_bursts_sets_as_two_seconds_of_it_draw() -> None:
    ref = _Reference(set(), generation_s=0.1)  # 2 s buys 20 draws of the burst's 100 sets
    set_scale(session_of(ref), 0, TimedSets(5, 5), 7, 100)
    assert len(ref.drawn) == 5 + 20


def test_sets_of_the_same_bytes_are_weighed_by_the_references_time_on_them() -> None:
    """Red team round 29's h01: a padded batch of fixed shapes, a prefill on some seeds: the bytes say
    1.0, the reference's own time on the burst's sets says how much more work they hold."""
    heavy = {timed_seed(7, j) for j in range(0, 30, 3)}  # every third burst set: 270x the work
    ref = _Reference(set(), heavy=heavy, heavy_us=27_000.0)
    scale = set_scale(session_of(ref), 0, TimedSets(5, 5), 7, 30)
    assert scale == pytest.approx((20 * 100 + 10 * 27_000) / 30 / 100)
    assert ref.timed_on == [TimedSets(5, 5), TimedSets(7, 30)]  # the round's sets, then the burst's


def test_the_larger_of_bytes_and_work_is_the_scale() -> None:
    large = {timed_seed(7, j) for j in range(0, 30, 3)}  # 256x the bytes on a third: 86x
    heavy = {timed_seed(7, 0)}  # one set of 3x the work: 1.07x
    ref = _Reference(large, heavy=heavy, heavy_us=300.0)
    assert set_scale(session_of(ref), 0, TimedSets(5, 5), 7, 30) == pytest.approx((20 + 10 * 256) / 30)


def test_a_round_on_heavy_sets_is_never_made_stricter_by_light_burst_sets() -> None:
    heavy = {timed_seed(5, j) for j in range(5)}  # the timed calls all drew the long batch
    ref = _Reference(set(), heavy=heavy, heavy_us=27_000.0)
    assert set_scale(session_of(ref), 0, TimedSets(5, 5), 7, 30) == 1.0


def test_a_slow_reference_weighs_a_sample_of_the_bursts_first_sets() -> None:
    """SCALE_REFERENCE_S of the reference's time at most (the floor of MIN_SIZED_SETS sets holds)."""
    ref = _Reference(set(), heavy={timed_seed(5, j) for j in range(5)} | {timed_seed(7, 0)}, heavy_us=1e6)
    set_scale(session_of(ref), 0, TimedSets(5, 5), 7, 100)  # 1 s a call on the timed sets: 4 affordable
    assert ref.timed_on[-1] == TimedSets(7, spotcheck.MIN_SIZED_SETS)
    fast = _Reference(set(), heavy_us=100.0)
    set_scale(session_of(fast), 0, TimedSets(5, 5), 7, 100)  # 100 us a call: all 100 burst sets
    assert fast.timed_on[-1] == TimedSets(7, 100)


@pytest.mark.parametrize(("big", "scale"), [(3, 3.0), (1, 1.0)])
def test_a_reference_that_cannot_be_timed_leaves_the_bytes_word(big: int, scale: float) -> None:
    ref = _Reference({timed_seed(7, j) for j in range(30)}, small=1, big=big)

    def fails(*args: Any) -> Any:
        raise RuntimeError("out of memory")

    ref.time_on_sets = fails  # type: ignore[method-assign]
    assert set_scale(session_of(ref), 0, TimedSets(5, 5), 7, 30) == scale


def test_a_round_timed_at_no_time_is_no_scale() -> None:
    ref = _Reference(set(), heavy={timed_seed(7, 0)}, heavy_us=500.0)
    ref.time_on_sets = lambda idx, rounds, *a: SimpleNamespace(  # type: ignore[method-assign]
        samples_us=[0.0] if rounds[0].seed == 5 else [500.0]
    )
    assert set_scale(session_of(ref), 0, TimedSets(5, 5), 7, 30) == 1.0


def test_a_round_of_no_counted_sets_is_weighed_on_its_first() -> None:
    ref = _Reference(set(), heavy={timed_seed(5, 1)}, heavy_us=900.0)  # the second set: never the round's
    assert set_scale(session_of(ref), 0, TimedSets(5, 0), 7, 30) == 1.0
    assert ref.timed_on[0] == TimedSets(5, 1)


def test_the_references_budget_sizes_the_bursts_sample_between_the_floor_and_the_whole() -> None:
    ref = _Reference(set(), heavy={timed_seed(5, j) for j in range(5)}, heavy_us=200_000.0)
    set_scale(session_of(ref), 0, TimedSets(5, 5), 7, 100)  # 0.2 s a call: 4 s buys 20 of the 100
    assert ref.timed_on[-1] == TimedSets(7, int(spotcheck.SCALE_REFERENCE_S / 0.2))
