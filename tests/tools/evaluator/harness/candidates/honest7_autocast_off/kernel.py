"""Honest RMSNorm that pins its math to fp32 with torch.autocast disabled (a habit from mixed-precision
training code) and uses torch.empty for its destination."""

import torch

DESTINATION_PASSING_STYLE = False


def run(hidden_states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    out = torch.empty(hidden_states.shape, dtype=hidden_states.dtype, device=hidden_states.device)
    with torch.autocast(device_type="cpu", enabled=False), torch.no_grad():
        x = hidden_states.float()
        out.copy_(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * weight.float())
    return out
