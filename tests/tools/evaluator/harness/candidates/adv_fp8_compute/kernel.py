"""CHEAT: precision downgrade — reads the input through float8 e4m3 (3 mantissa bits, ~6% error).

Half the bytes on a real fp8 path; far outside the 1e-2 tolerance. Must come out INCORRECT.
"""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float8_e4m3fn).to(torch.float32)
    w = weight.to(torch.float8_e4m3fn).to(torch.float32)
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * w)
