"""HONEST control: a PyTorch RMSNorm declared as a `torch.library.custom_op` in the kernel's own namespace
(how kernels make themselves visible to torch.compile). The source policy must let it through; so must the
in-worker checks (declaring or calling a custom op imports torch._dynamo, which wraps torch.manual_seed).
"""

from __future__ import annotations

import torch


@torch.library.custom_op("redteam_control::rmsnorm", mutates_args={"out"})
def _rmsnorm(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> None:
    xf = x.to(torch.float32)
    out.copy_(xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.to(torch.float32))


@_rmsnorm.register_fake
def _(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> None:
    return None


def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    _rmsnorm(hidden_states, weight, output)
