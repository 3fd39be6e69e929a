"""Honest torch residual-add + RMSNorm for the `nemotron_rms_norm` fixture (eps is a Python scalar)."""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
        output: torch.Tensor) -> None:
    x = (residual + hidden_states).to(torch.float32)
    normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    output.copy_(weight * normed.to(torch.bfloat16))
