"""Honest torch RMSNorm for the `rmsnorm` fixture, destination-passing: the control for the cheats."""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    output.copy_((x * inv_rms) * weight.to(torch.float32))
