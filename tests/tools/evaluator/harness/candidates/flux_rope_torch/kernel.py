"""Honest torch rotary embedding for the `flux_rope` fixture, written without the reference's reshapes."""

from __future__ import annotations

import torch


@torch.no_grad()
def run(query_or_key: torch.Tensor, freqs_cos: torch.Tensor, freqs_sin: torch.Tensor,
        output: torch.Tensor) -> None:
    x = query_or_key.float()
    cos = freqs_cos.float()[None, :, None, :]
    sin = freqs_sin.float()[None, :, None, :]
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = x1 * cos[..., 0::2] - x2 * sin[..., 0::2]
    out[..., 1::2] = x1 * sin[..., 1::2] + x2 * cos[..., 1::2]
    output.copy_(out)
