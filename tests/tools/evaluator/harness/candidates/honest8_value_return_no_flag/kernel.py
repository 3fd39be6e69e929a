"""HONEST (but undeclared): RMSNorm written the way the SOL reference is, run(hidden_states, weight)
returning the output, with no solution.json and no DESTINATION_PASSING_STYLE flag."""

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x = hidden_states.to(torch.float32)
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * weight.to(torch.float32)
    return y.to(hidden_states.dtype)
