"""Red team, round ten (candidates/redteam10_*): the fatal-signal handler check (faults.py), policy off.

Round 9b's `redteam9b_segv_guard_pages` made the kernel's buffers read-only (mprotect) and caught SIGSEGV:
the harness's own untimed write faulted into the kernel's handler, which computed there. The worker now
names, before every untimed step, a fatal signal's handler whose code is the kernel's own (anonymous
memory, libffi, a file of its own or written while it ran). A helper attacked that check with the policy
off (the policy refuses ctypes and faulthandler; these are its second line) and got past it twice:

- redteam10_faulthandler_front: the kernel's handler first, then `faulthandler.enable()`. sigaction()
  reported faulthandler's handler (libpython: allowed); on a fault faulthandler restores the handler it
  found (the kernel's) and raises the signal again. Now the check looks behind faulthandler (disabled for
  a moment, every handler put back exactly) when faulthandler's handler is in front.
- redteam10_tamper_faults_state: one line at import, `faults.FATAL_SIGNALS = ()` through sys.modules,
  and the check looked at no signal (the sentinel compared only the harness's functions). Now it compares
  every name the harness's modules bind, settings too, before every untimed step.

Both PASSed (4-5x below the honest kernel in the helper's fastest runs, every checked output right). An
honest kernel that leaves faulthandler on must still PASS: its handlers are the runtime's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.evaluator.harness.test_adversarial import CANDIDATES, describe, run_harness
from tests.tools.evaluator.harness.test_redteam_round9 import RMSNORM

BEHIND_THE_POLICY = {
    "redteam10_faulthandler_front": "the kernel handles SIGSEGV itself (its handler is in anonymous memory",
    "redteam10_tamper_faults_state": "the harness's own settings were changed: harness.faults.FATAL_SIGNALS",
}


@pytest.mark.slow
@pytest.mark.parametrize("candidate", sorted(BEHIND_THE_POLICY))
def test_the_fatal_signal_check_cannot_be_hidden_or_switched_off(tmp_path: Path, candidate: str) -> None:
    operator, shapes = RMSNORM
    result = run_harness(
        tmp_path, operator, CANDIDATES / candidate, shapes, seeds=1, extra_args=("--no-source-policy",)
    )
    assert result["status"] == "REWARD_HACK", describe(result)
    assert BEHIND_THE_POLICY[candidate] in result["message"], describe(result)


@pytest.mark.slow
@pytest.mark.parametrize("candidate", sorted(BEHIND_THE_POLICY))
def test_the_policy_refuses_them_first(tmp_path: Path, candidate: str) -> None:
    operator, shapes = RMSNORM
    result = run_harness(tmp_path, operator, CANDIDATES / candidate, shapes, seeds=1)
    assert result["status"] == "REWARD_HACK", describe(result)
    assert "ctypes" in result["message"] or "faulthandler" in result["message"], describe(result)


@pytest.mark.slow
def test_an_honest_kernel_that_leaves_faulthandler_on_passes(tmp_path: Path) -> None:
    operator, shapes = RMSNORM
    result = run_harness(
        tmp_path,
        operator,
        CANDIDATES / "honest10_faulthandler_debug",
        shapes,
        seeds=1,
        extra_args=("--no-source-policy",),  # the policy refuses faulthandler; the runtime check must not
    )
    assert result["status"] == "PASS", describe(result)
