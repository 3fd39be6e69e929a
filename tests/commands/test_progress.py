"""Progress output: a heartbeat line during long quiet steps off a terminal, a terminal panel whose clock
moves on its own and shows no markup, and the real totals after a resume. Clocks are injected."""

from __future__ import annotations

import io
import time

from aka_graph.progress import Progress
from aka_graph.state import Incumbent, TrialRecord


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    """What rich takes for a terminal (so the live panel really draws into it)."""

    def isatty(self) -> bool:
        return True


def wait_for(predicate, timeout_s: float = 20.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_plain_output_prints_a_heartbeat_after_15_quiet_seconds_and_not_before() -> None:
    out, clock = io.StringIO(), Clock()
    progress = Progress(stream=out, clock=clock, tick_s=3600)  # the test drives beat() itself
    progress.handle("tasks", {"name": "evaluate", "input": {}})
    progress.handle("updates", {"implement": {"episode": 1, "episode_kind": "fast", "trial": 2}})
    clock.now += 14.9
    assert not progress.beat() and out.getvalue() == ""
    clock.now += 0.1
    assert progress.beat()
    line = out.getvalue().strip()
    assert "still in evaluate (episode 1, trial 2): 15s in this step" in line and "tokens=0" in line
    clock.now += 10
    assert not progress.beat()  # 10 s since the heartbeat: quiet is measured from the last line
    progress.handle("custom", {"node": "evaluate", "event": "evaluated", "status": "PASS"})
    clock.now += 14
    assert not progress.beat()  # an event line also resets it
    clock.now += 1
    assert progress.beat() and out.getvalue().count("still in evaluate") == 2
    progress.close()


def test_the_heartbeat_runs_on_its_own_thread_without_any_event() -> None:
    out, clock = io.StringIO(), Clock()
    progress = Progress(stream=out, clock=clock, tick_s=0.01)
    progress.handle("tasks", {"name": "abba", "input": {}})
    clock.now += 16
    assert wait_for(lambda: "still in abba" in out.getvalue())
    progress.close()


def test_quiet_output_has_no_heartbeat() -> None:
    quiet = Progress.for_terminal(quiet=True)
    quiet.clock = lambda: 1e9
    assert not quiet.beat()


def test_terminal_panel_clock_moves_on_its_own_and_shows_no_markup() -> None:
    out, clock = Terminal(), Clock()
    progress = Progress(stream=out, live=True, clock=clock)
    progress.handle("tasks", {"name": "evaluate", "input": {}})
    progress.log("[evaluate] evaluated status=PASS")
    clock.now += 42  # no event at all: the panel's own refresh must show the new elapsed time
    assert wait_for(lambda: "42s" in out.getvalue()), out.getvalue()[-2000:]
    progress.close()
    text = out.getvalue()
    assert "[evaluate] evaluated status=PASS" in text
    assert "[dim]" not in text and "[/dim]" not in text


def test_after_a_resume_the_lines_carry_the_campaign_totals_not_zeros() -> None:
    out = io.StringIO()
    progress = Progress(stream=out, heartbeat_s=None)
    progress.resume_from(
        {
            "tokens_spent": 71100,
            "episode": 2,
            "episode_kind": "full",
            "trial": 1,
            "candidate": TrialRecord(episode=2, trial=1, kernel_dir="/k", objective=49.8),
            "incumbent": Incumbent(version=1, kernel_path="/k", sha256="s", objective=49.8),
        }
    )
    progress.handle("updates", {"implement": {"tokens_spent": 900}})
    progress.handle("custom", {"node": "implement", "event": "agent_finished"})
    line = out.getvalue().strip()
    assert "tokens=72000" in line and "incumbent=v1 (49.8)" in line and "best=49.8" in line
    assert progress.episode == 2 and progress.kind == "full"
