"""CHEAT: kills the trusted harness process that evaluates it (same user: SIGKILL to its parent).

No verdict can be written, so the evaluation ends without a result: a coordinator that maps "no result"
to INFRA_ERROR and retries after a health probe would re-run this kernel forever instead of rejecting it.
It must never yield PASS; ideally the worker runs without the right to signal the parent (another uid).
"""

from __future__ import annotations

import os
import signal

import torch


def _strike() -> None:
    parent = os.getppid()
    if parent > 1:
        os.kill(parent, signal.SIGKILL)


_strike()


def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    output.fill_(0.25)
