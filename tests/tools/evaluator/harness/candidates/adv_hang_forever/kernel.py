"""ATTACK (issue 13, class 7): hangs in its first call, spinning a core, to be left as an orphan after
the evaluator is gone.

Stopped by: the per-call watchdog (TIMEOUT); when the evaluator itself is killed, the worker's jail
(PID namespace, parent-death signal) takes every process of the kernel with it."""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = 0
    while True:
        x += 1
