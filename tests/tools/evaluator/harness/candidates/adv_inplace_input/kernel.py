"""CHEAT: overwrites its input (fooled the official SOL CLI): normalises hidden_states in place.

The output is right, but the caller's input is destroyed; and once an input has been normalised, a
second call on it finds rows of unit RMS and skips the reduction. Caught only by checking inputs for
mutation after the call.
"""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
    hidden_states.copy_(normed)  # scratch space we were never given
    torch.mul(normed, weight.to(torch.float32), out=normed)
    output.copy_(normed)
