"""Host timing measured by the trusted parent (hostclock.py): the rule that compares the worker's own
readings of its calls with the parent's, and the step wire's read with a watchdog. The whole path runs
in test_guards.py (an honest kernel and a frame-walking timer fake in one evaluation).

The rule's cases are readings of the kind measured on this 2-core host, idle and with three busy loops:
per timed call, the worker's own reading (us), the parent's reading of the call step and of the noop
step just before it (us; the function takes ns)."""

from __future__ import annotations

import os
import threading

import pytest

from aka_graph.tools.evaluator.harness.hostclock import ANSWER, OK, ClockPairs, read_exact, tampered


def _verdict(own: list[float], used: list[float], noops: list[float]) -> str | None:
    return tampered(own, [int(u * 1e3) for u in used], [int(n * 1e3) for n in noops])


HONEST = {
    # an idle host: the call step costs the call plus a noop, to a few us
    "idle": ([52.4, 53.0, 52.1, 55.0, 52.6], [77.0, 78.1, 76.9, 80.2, 77.9], [24.6, 25.3, 24.4, 25.1, 25.5]),
    # one noop far cheaper than the rest (its neighbour call looks 15 us too dear): the median keeps it out
    "one cheap noop": (
        [59.0, 57.0, 53.0, 52.0, 49.0],
        [80.0, 76.0, 73.0, 79.0, 75.0],
        [10.0, 19.0, 16.0, 27.0, 26.0],
    ),
    # a busy host: noops drift by 40 us, each call with its noop
    "busy host": (
        [78.0, 80.5, 77.1, 79.0, 78.5],
        [120.0, 101.0, 139.0, 104.0, 99.2],
        [40.0, 22.0, 61.0, 26.0, 21.0],
    ),
    # the worker's reading a little above the parent's (its clock and the parent's /proc read differ)
    "own reading above": (
        [31.0, 30.2, 30.9, 31.4, 30.0],
        [52.0, 51.0, 51.5, 52.2, 50.9],
        [24.0, 23.5, 23.9, 24.1, 23.0],
    ),
    # measured at load ~5 (round 12): the worker read 270-420 us, the parent 10-25 us more
    "load 5": (
        [309.0, 298.0, 298.0, 356.0, 322.0],
        [378.0, 365.0, 357.0, 420.0, 403.0],
        [55.0, 61.0, 58.0, 70.0, 52.0],
    ),
    # CI, round 15: an honest index_add_ and matmul on torch's intra-op threads read 325.8 us, the parent
    # 436.9 us paired (the threads spin on past the worker's clock): a quarter below, no fake
    "multi-threaded call at load": (
        [325.0, 330.0, 322.0, 328.0, 326.0],
        [500.0, 495.0, 505.0, 490.0, 498.0],
        [63.0, 60.0, 66.0, 58.0, 62.0],
    ),
    # a call of a few us: the worker could halve it unseen, but a noop's jitter is no alarm either
    "tiny call": ([2.0, 1.0, 1.5, 2.2, 1.1], [30.0, 18.0, 27.0, 33.0, 21.0], [20.0, 12.0, 19.0, 21.0, 9.0]),
}

CHEATS = {
    # CI round 13: a frame-walking kernel halved its own readings of ~80 us calls while the noops spread
    # by 27 us, which the old slack (the noops' whole spread + 20 us) absorbed
    "halved, noops spread by 27 us": (
        [38.0, 35.5, 34.0, 36.2, 35.0],
        [98.0, 101.0, 92.0, 120.0, 95.0],
        [25.0, 27.0, 19.0, 46.0, 20.0],
    ),
    "halved on a busy host": (
        [45.0, 44.1, 47.0, 44.4, 46.0],
        [139.0, 118.0, 131.0, 121.0, 173.0],
        [35.0, 22.0, 15.0, 13.0, 43.0],
    ),
    "reported as nothing": ([0.0, 0.0, 0.0, 0.0, 0.0], [300.0, 305.0, 298.0, 310.0, 301.0], [20.0] * 5),
    # measured at load ~5 (round 12): the frame-walk fake reported ~160 us for calls of ~370 us
    "a 2.3x fake at load 5": (
        [211.0, 159.0, 163.0, 156.0, 161.0],
        [521.0, 426.0, 432.0, 426.0, 419.0],
        [55.0, 61.0, 58.0, 70.0, 52.0],
    ),
    "a 3x fake": ([100.0, 100.0, 100.0], [355.0, 361.0, 358.0], [55.0, 61.0, 58.0]),
}


@pytest.mark.parametrize("case", HONEST)
def test_an_honest_reading_is_never_called_tampered(case: str) -> None:
    assert _verdict(*HONEST[case]) is None


@pytest.mark.parametrize("case", CHEATS)
def test_a_shrunk_reading_is_tampered_whatever_the_noops_drift(case: str) -> None:
    found = _verdict(*CHEATS[case])
    assert found is not None and "harness's own clock times the same calls" in found


def test_the_message_gives_both_readings_per_call() -> None:
    found = _verdict(*CHEATS["reported as nothing"])
    assert found is not None
    assert "reported 0.000 us per call" in found and "at 281.000 us per call" in found


# CI, round 16: an honest x * w read 143 us by its own clock and 277 us by the parent's, paired, in one
# round of 5 calls on a loaded host: no rule on one round's pairs tells it from a fake that halves.
NOISY_HONEST_ROUND = (
    [140.0, 143.0, 150.0, 138.0, 146.0],
    [340.0, 352.0, 298.0, 330.0, 360.0],
    [70.0, 75.0, 60.0, 49.0, 80.0],
)


def _pairs(*rounds: tuple[list[float], list[float], list[float]]) -> ClockPairs:
    pairs = ClockPairs()
    for own, used, noops in rounds:
        pairs.add(own, [int(u * 1e3) for u in used], [int(n * 1e3) for n in noops])
    return pairs


# the same calls timed again, the host calmer: each call step costs the call and its noop
CALM_ROUND = (
    [141.0, 139.0, 145.0, 150.0, 142.0],
    [205.0, 210.0, 200.0, 215.0, 208.0],
    [60.0, 65.0, 58.0, 62.0, 63.0],
)
# a fake that halves its reading of the same calls
HALVING_ROUND = (
    [72.0, 70.0, 71.0, 74.0, 70.0],
    [205.0, 210.0, 200.0, 215.0, 208.0],
    [60.0, 65.0, 58.0, 62.0, 63.0],
)


def test_one_noisy_honest_round_is_a_dispute_that_the_next_rounds_settle() -> None:
    assert _pairs(NOISY_HONEST_ROUND).verdict() is not None  # so modes.py times the workload again
    assert _pairs(NOISY_HONEST_ROUND, CALM_ROUND, CALM_ROUND).verdict() is None


def test_a_disputed_fake_that_reads_honestly_in_the_next_round_is_still_caught_in_the_last() -> None:
    assert _pairs(HALVING_ROUND).verdict() is not None
    assert _pairs(HALVING_ROUND, CALM_ROUND, HALVING_ROUND).verdict() is not None


@pytest.mark.parametrize("case", CHEATS)
def test_a_fake_stays_a_fake_over_every_round_pooled(case: str) -> None:
    fake = CHEATS[case]
    found = _pairs(fake, fake, fake).verdict()
    assert found is not None and "harness's own clock times the same calls" in found


def test_no_readings_no_verdict() -> None:
    assert tampered([], [], []) is None
    assert tampered([1.0], [], []) is None


def test_the_step_wire_reads_whole_frames_and_gives_up_at_its_deadline() -> None:
    r, w = os.pipe()
    try:
        frame = ANSWER.pack(OK, 12.5)
        writer = threading.Thread(target=lambda: [os.write(w, frame[:5]), os.write(w, frame[5:])])
        writer.start()
        assert ANSWER.unpack(read_exact(r, ANSWER.size, 30.0) or b"") == (OK, 12.5)
        writer.join()
        assert read_exact(r, ANSWER.size, 0.05) is None  # nothing more comes: the watchdog's answer
        os.close(w)
        w = -1
        assert read_exact(r, ANSWER.size, 5.0) == b""  # end of file: the worker died
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
