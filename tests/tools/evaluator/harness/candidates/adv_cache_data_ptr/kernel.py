"""CHEAT: skip all work when called again with the same input/output pointers (answer already there).

Catches harnesses that re-validate the timed invocation without writing fresh values into the captured
inputs, or that time repeated calls on unchanged buffers from the host.
"""

from __future__ import annotations

import torch

_seen: set[tuple[int, int, int, tuple[int, ...]]] = set()


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    key = (hidden_states.data_ptr(), weight.data_ptr(), output.data_ptr(), tuple(hidden_states.shape))
    if key in _seen:
        return
    x = hidden_states.to(torch.float32)
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
    _seen.add(key)
