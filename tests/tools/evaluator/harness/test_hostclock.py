"""Host timing measured by the trusted parent (hostclock.py): the rule that compares the worker's own
readings of its calls with the parent's, and the step wire's read with a watchdog. The whole path runs
in test_guards.py (an honest kernel and a frame-walking timer fake in one evaluation)."""

from __future__ import annotations

import os
import threading

from aka_graph.tools.evaluator.harness.hostclock import ANSWER, OK, read_exact, tampered

NOOPS_NS = [55_000, 61_000, 58_000, 70_000, 52_000]  # measured: an empty step costs ~55 us, 20 us of jitter


def test_honest_readings_a_step_below_the_parents_pass() -> None:
    """Measured at load ~5: the worker reads 270-420 us, the parent 10-25 us more."""
    assert tampered([309, 298, 298, 356, 322], [323, 310, 302, 365, 348], NOOPS_NS) is None
    assert tampered([424, 347, 339, 339, 334], [442, 362, 350, 349, 361], NOOPS_NS) is None


def test_a_tiny_call_is_never_called_faked_for_the_steps_own_jitter() -> None:
    assert tampered([5, 6, 5], [30, 35, 28], NOOPS_NS) is None


def test_readings_shrunk_through_the_stack_are_caught() -> None:
    """Measured: the frame-walk fake reported ~160 us for calls the parent read at ~370 us."""
    message = tampered([211, 159, 163, 156, 161], [466, 365, 374, 356, 367], NOOPS_NS)
    assert message is not None and "harness's own clock times the same calls" in message
    assert tampered([100, 100, 100], [300, 300, 300], NOOPS_NS) is not None  # a 3x fake


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
