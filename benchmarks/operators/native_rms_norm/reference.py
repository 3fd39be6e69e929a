"""Native Atrex-Bench operator: RMSNorm over the last dimension (Llama style), the reference Model.

The weight is drawn from a generator seeded by the hidden size, so every Model built from the same
init_kwargs (reference or candidate) holds the same, non-trivial weight.
"""

from __future__ import annotations

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6, dtype: str = "bfloat16") -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(1000 + hidden_size)
        weight = 1.0 + 0.1 * torch.randn(hidden_size, generator=gen)
        self.weight = nn.Parameter(weight.to(getattr(torch, dtype)), requires_grad=False)
        self.eps = eps

    @torch.no_grad()
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.to(torch.float32)
        inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return ((xf * inv_rms) * self.weight.to(torch.float32)).to(x.dtype)
