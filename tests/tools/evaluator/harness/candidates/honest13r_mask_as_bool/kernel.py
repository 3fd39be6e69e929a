"""HONEST: the float padding mask read as a bool once (mask != 0) and applied as an additive -inf bias,
as a fused attention kernel would; the same answer as the reference."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    keep = mask != 0
    bias = torch.zeros(keep.shape, dtype=q.dtype, device=q.device).masked_fill(~keep, float("-inf"))
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5 + bias[:, None, None, :]
    return torch.softmax(scores, dim=-1) @ v
