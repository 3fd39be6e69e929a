"""CHEAT (issue 13, class 7): kills its parent (the trusted evaluator) through a computed name, so the
evaluation ends without a verdict and the failure is blamed on the environment (INFRA_ERROR, retried).

Caught by: the source policy (a computed getattr); in the jail the parent is not even visible
(getppid() is 0 there), so the signal can only reach the kernel's own process group: RUNTIME_ERROR."""

from __future__ import annotations

import os
import signal

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    name = "".join(["ki", "ll"])
    getattr(os, name)(os.getppid(), signal.SIGKILL)
    output.zero_()
