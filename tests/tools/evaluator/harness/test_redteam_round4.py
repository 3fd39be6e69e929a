"""Red team, round four: the defences changed after the H200 round-4 findings (a71b9ed, bbfc992, 4bdc107).

Each test asserts the verdict the harness should give. Found by the red team and fixed since (the
tests failed on 3d05c1c's harness):

- guards._library_thread let tqdm's TMonitor run, but a TMonitor takes its clock and stop event from the
  class-level dict `TMonitor._test` (tqdm's unit-test hook): filled by a method call the static policy
  lets through, it ran the candidate's function on a thread that outlives every call, unflagged. Now no
  tqdm thread is let pass: the worker switches tqdm's monitor off before the candidate is imported.
- guards._library_setting compared the realpath of TRITON_PTXAS_PATH with torch's ptxas: a symlink the
  candidate made (and may retarget) passed; the write itself went through an alias of os.environ, which
  the static policy did not see. Now only the exact path of a regular file counts, and the policy
  follows names bound to os.environ.
- modes._time_round's dispute retry: a final failure whose text the candidate controls (an exception
  raised during the burst) must not be mistaken for a clock disagreement and retried (passes today).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from aka_graph.tools.evaluator.harness import modes
from aka_graph.tools.evaluator.harness.guards import Sentinel
from aka_graph.tools.evaluator.harness.plausibility import DISAGREEMENT, is_disagreement
from aka_graph.tools.evaluator.harness.policy import scan_source
from tests.tools.evaluator.harness.test_adversarial import CANDIDATES, CHEAT_SHAPES, SOL_FIXTURES, run_harness
from tests.tools.evaluator.harness.test_modes import SESSION, FakeKernelState

SHIPPED_PTXAS = os.path.join(os.path.dirname(torch.__file__), "bin", "ptxas")


# --- 2. guards._library_thread: tqdm's own monitor running the candidate's code ------------------------


@pytest.mark.parametrize("hook", ["time", "Event"])
def test_a_tmonitor_running_the_candidates_code_through_tqdms_test_hook_is_a_thread_left_running(
    hook: str,
) -> None:
    import tqdm
    from tqdm._monitor import TMonitor

    ran_on: list[str] = []
    stop = threading.Event()

    def candidate_clock() -> float:  # run() calls self._time() first thing, on the monitor thread
        ran_on.append(threading.current_thread().name)
        stop.wait(30)
        return time.time()

    class CandidateEvent(threading.Event):  # run() calls self.was_killed.wait(interval) every loop
        def wait(self, timeout: float | None = None) -> bool:
            ran_on.append(threading.current_thread().name)
            stop.wait(30)
            return super().wait(0)

    sentinel = Sentinel()
    saved = dict(TMonitor._test)
    TMonitor._test.update({"time": candidate_clock} if hook == "time" else {"Event": CandidateEvent})
    try:
        monitor = TMonitor(tqdm.tqdm, 10)
    finally:
        TMonitor._test.clear()
        TMonitor._test.update(saved)
    try:
        deadline = time.monotonic() + 5
        while not ran_on and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ran_on == ["tqdm_monitor"]  # the candidate's function is running on the monitor thread
        assert sentinel.violations() == ["threads left running: tqdm_monitor"]
    finally:
        monitor.was_killed.set()
        stop.set()
        monitor.join(5)


def test_a_hidden_tmonitor_thread_is_reward_hack_through_the_harness(tmp_path: Path) -> None:
    res = run_harness(tmp_path, SOL_FIXTURES / "rmsnorm", CANDIDATES / "redteam4_tqdm_test_hook",
                      CHEAT_SHAPES, seeds=1)  # fmt: skip
    # today the policy lets `TMonitor._test.update(...)` through: the sentinel (or the policy) must catch it
    assert res["status"] == "REWARD_HACK", res["message"]


# --- 2. guards._library_setting: TRITON_PTXAS_PATH through a link the candidate owns --------------------


def test_triton_ptxas_path_naming_the_candidates_own_symlink_is_a_violation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    sentinel = Sentinel()
    link = tmp_path / "ptxas"
    link.symlink_to(SHIPPED_PTXAS)  # dangling on a CPU build: realpath follows it all the same
    monkeypatch.setenv("TRITON_PTXAS_PATH", str(link))
    found = sentinel.violations()
    link.unlink()
    link.symlink_to(tmp_path / "my_ptxas")  # retargeted between two checks: what Triton would run
    assert found == ["reserved environment variables changed: TRITON_PTXAS_PATH"]


def test_the_policy_flags_a_write_through_an_alias_of_os_environ() -> None:
    assert scan_source("import os\nenv = os.environ\nenv['TRITON_PTXAS_PATH'] = '/tmp/x'\n", "kernel.py")


def test_a_candidate_pointing_triton_at_its_own_ptxas_link_is_reward_hack_through_the_harness(
    tmp_path: Path,
) -> None:
    res = run_harness(tmp_path, SOL_FIXTURES / "rmsnorm", CANDIDATES / "redteam4_ptxas_symlink",
                      CHEAT_SHAPES, seeds=1)  # fmt: skip
    # the sentinel's env check, or the policy once it follows the alias
    assert res["status"] == "REWARD_HACK", res["message"]


# --- 1. modes._time_round: what is retried -----------------------------------------------------------


def test_a_burst_failure_carrying_the_disagreement_words_is_final_not_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The words `is_disagreement` looks for can appear in text the candidate writes (an exception it
    raises during the burst becomes 'during the timing burst: <its message>'); only the parent's own
    REWARD_HACK finding may be retried, so the candidate cannot buy itself another round (and skip the
    burst failure) by quoting them."""
    forged = f"during the timing burst: ValueError: the worker reported 1.0 us per call, {DISAGREEMENT} x"
    assert not is_disagreement(("RUNTIME_ERROR", forged))
    monkeypatch.setattr(modes, "check_worker", lambda *a, **k: ("RUNTIME_ERROR", forged))
    for name in ("verify_timed_calls", "verify_graph_copies", "outside_work"):
        monkeypatch.setattr(modes, name, lambda *a, **k: None)
    ks = FakeKernelState([3.4])
    assert modes._time_round(SESSION, ks, 0) is None
    assert ks.rounds == 1 and ks.verdicts[0].status == "RUNTIME_ERROR"


def test_the_retry_never_keeps_the_disputed_reading_of_an_adaptive_faker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker learns that its report was disputed (a second `time` request for the same workload, and
    more than one burst within the round) and can report honestly afterwards: the retry then turns a
    caught fake into a PASS with no penalty. The latency kept must at least be the agreeing one, never
    the fake, and the message must carry the first reading (the evidence)."""
    truth = 5.9
    estimates: list[float] = []

    def check_worker(ks: Any, on_gpu: bool, timeout_s: float, wl: int, reported: float, calls: int,
                     prepared: bool, inputs: Any = None) -> tuple[str, str] | None:  # fmt: skip
        estimates.append(truth)
        if reported >= truth * 0.8 - 0.5:
            return None
        return "REWARD_HACK", f"the worker reported {reported:.3f} us per call, {DISAGREEMENT} of 1 x 1"

    monkeypatch.setattr(modes, "check_worker", check_worker)
    for name in ("verify_timed_calls", "verify_graph_copies", "outside_work"):
        monkeypatch.setattr(modes, name, lambda *a, **k: None)
    ks = FakeKernelState([2.0, 3.0, truth])  # fakes twice, learns it was caught, then honest
    kept = modes._time_round(SESSION, ks, 0)
    assert kept == pytest.approx(truth) and ks.verdicts[0].latencies == [pytest.approx(truth)]
    assert "2.000 us" in ks.verdicts[0].message and ks.rounds == 3
