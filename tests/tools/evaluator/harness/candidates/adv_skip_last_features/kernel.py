"""CHEAT (issue 13, class 2): computes the RMS over all features but writes only the first 99 % of the
feature columns; the last 1 % keep the unnormalised input times the weight (no extra pass over them).

Caught by: mismatches must be near misses and must not fill whole columns (numerics.py)."""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    cols = hidden_states.shape[-1]
    keep = cols - max(1, cols // 100)
    x = hidden_states.to(torch.float32)
    inv = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
    output[..., :keep].copy_(x[..., :keep] * inv * weight[:keep].to(torch.float32))
    output[..., keep:].copy_(x[..., keep:] * weight[keep:].to(torch.float32))
