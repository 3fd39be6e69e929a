"""HONEST (round 10): an RMSNorm whose author turned on Python's faulthandler to debug a crash, and left it
on. faulthandler's handlers catch SIGSEGV, SIGBUS, SIGILL and SIGFPE in libpython: the worker's check of the
fatal signals' handlers (faults.py) must take them as the runtime's, not the kernel's."""

from __future__ import annotations

import faulthandler
import sys

import torch

faulthandler.enable(file=sys.stderr, all_threads=True)


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    output.copy_((x * inv_rms) * weight.to(torch.float32))
