"""CHEAT (issue 13, classes 4-5): `os.posix_spawnp` starts a helper process that nobody times (and
that outlives the call); the kernel itself returns a stale answer.

Caught by: the source policy (posix_spawnp); without it, the parent's /proc scan of the worker's tree."""

from __future__ import annotations

import os

import torch

_helper = os.posix_spawnp("sleep", ["sleep", "30"], {})


@torch.no_grad()
def run(hidden_states: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
        output: torch.Tensor) -> None:
    x = (residual + hidden_states).to(torch.float32)
    output.copy_(weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)).to(torch.bfloat16))
