"""Honest RMSNorm, destination-passing, that also returns its destination (so it chains in the author's
own tests): the return value is ignored under DPS."""

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
    x = hidden_states.to(torch.float32)
    output.copy_(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * weight.to(torch.float32))
    return output
