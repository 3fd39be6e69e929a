"""Honest RMSNorm from an author who sets float32 matmul precision at import (a habit on GPUs)."""

import torch

torch.set_float32_matmul_precision("high")


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    output.copy_(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * weight.to(torch.float32))
