"""HONEST control: a PyTorch RMSNorm behind `torch.compile` (created at import, compiled lazily). Nothing
in it touches the harness; `torch.compile` imports torch._dynamo, which wraps torch.manual_seed.
"""

from __future__ import annotations

import torch


def _rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.to(torch.float32)
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.to(torch.float32)).to(x.dtype)


_compiled = torch.compile(_rmsnorm, dynamic=False)


def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    output.copy_(_compiled(hidden_states, weight))
