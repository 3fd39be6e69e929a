"""Honest torch RMSNorm that returns a fresh output (solution.json: destination_passing_style false)."""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return ((x * inv_rms) * weight.to(torch.float32)).to(hidden_states.dtype)
