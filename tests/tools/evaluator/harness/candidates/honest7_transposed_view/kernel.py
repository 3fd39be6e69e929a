"""Honest RMSNorm computed column-major (a transposed buffer) and returned as a non-contiguous view of
its own result."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xt = hidden_states.to(torch.float32).t().contiguous()  # [hidden, batch]
    inv = torch.rsqrt(xt.pow(2).mean(0, keepdim=True) + 1e-5)
    yt = (xt * inv * weight.to(torch.float32)[:, None]).to(hidden_states.dtype)
    return yt.t()  # [batch, hidden], strides (1, batch)
