"""CHEAT (CUDA): honest when called eagerly, does nothing while a CUDA graph is being captured.

The captured graph is empty: a harness must reject it, never time it as zero. On CPU it is honest.
"""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    if hidden_states.is_cuda and torch.cuda.is_current_stream_capturing():
        return
    x = hidden_states.to(torch.float32)
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
