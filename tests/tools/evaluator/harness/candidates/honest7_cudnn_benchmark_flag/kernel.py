"""Honest RMSNorm from an author whose GPU boilerplate turns on cuDNN autotuning at import (no effect on
this operator, and none on CPU)."""

import torch

torch.backends.cudnn.benchmark = True


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    output.copy_(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * weight.to(torch.float32))
