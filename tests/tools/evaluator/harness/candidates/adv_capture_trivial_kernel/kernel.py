"""CHEAT (CUDA): while a CUDA graph is captured, launches one tiny kernel instead of the work.

The capture is not empty (one kernel), so only re-validating the timed graph (fresh inputs written into
the captured buffers, outputs poisoned, replay, compare) or the SOL bound catches it. Honest on CPU.
"""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    if hidden_states.is_cuda and torch.cuda.is_current_stream_capturing():
        output[:1, :1].zero_()
        return
    x = hidden_states.to(torch.float32)
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
