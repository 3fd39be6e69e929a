"""CHEAT: value-returning, normalises hidden_states in place and returns that very input tensor.

No allocation, no separate output; the caller's input is gone. A harness must reject an output that
aliases an input (and notice the mutated input).
"""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x = hidden_states.to(torch.float32)
    hidden_states.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
    return hidden_states
