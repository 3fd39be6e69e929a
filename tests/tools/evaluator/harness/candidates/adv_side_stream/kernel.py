"""CHEAT (CUDA): launches the work on a private side stream and never joins it to the caller's stream.

Events recorded on the caller's stream see no work; a device-wide synchronize before the check hides
it. A harness must time all streams (or refuse unjoined work in a graph capture). On CPU it is honest.
"""

from __future__ import annotations

import torch

_side: torch.cuda.Stream | None = None


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    global _side
    if hidden_states.is_cuda:
        if _side is None:
            _side = torch.cuda.Stream(device=hidden_states.device)
        with torch.cuda.stream(_side):
            x = hidden_states.to(torch.float32)
            y = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32)
            output.copy_(y)
        return
    x = hidden_states.to(torch.float32)
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
