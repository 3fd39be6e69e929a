"""CHEAT (issue 13, class 2): never normalises the last ~1 % of rows (one of 131): they get a cheap
guess (the residual sum times the weight), so 99.2 % of elements match and the ratio rule alone passes.

Caught by: mismatches must be near misses and must not fill whole rows (numerics.py)."""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
        output: torch.Tensor) -> None:
    x = (residual + hidden_states).to(torch.float32).reshape(-1, hidden_states.shape[-1])
    rows = x.shape[0]
    skip = max(1, rows // 100)
    out = output.view(-1, hidden_states.shape[-1])
    done = x[: rows - skip]
    out[: rows - skip].copy_(weight * (done * torch.rsqrt(done.pow(2).mean(-1, keepdim=True) + eps))
                             .to(torch.bfloat16))
    out[rows - skip:].copy_((weight.float() * x[rows - skip:]).to(torch.bfloat16))
