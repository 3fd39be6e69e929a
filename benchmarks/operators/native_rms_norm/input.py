"""Inputs of the native rms_norm operator: one activation tensor [num_tokens, hidden_size]."""

from __future__ import annotations

import torch


def _make_inputs(num_tokens: int, hidden_size: int, dtype: str = "bfloat16",
                 device: str | None = None) -> list[torch.Tensor]:
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(num_tokens, hidden_size, dtype=torch.float32, device=device)
    return [x.to(getattr(torch, dtype))]
