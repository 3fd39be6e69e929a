"""HONEST: RMSNorm that keeps its float32 scratch in a torch.Tensor subclass of its own, whose module is
given as torch's (as libraries that re-export a class under their public module name do), and never
changes the class of the harness's tensors.

The control for redteam11c_torch_named_reclass: a fix to guards.reclassed must still put back (and name)
a class the kernel put on a harness tensor whatever `__module__` says, and must leave a kernel's own
subclass instances, used on its own tensors, alone.
"""

from __future__ import annotations

import torch


class Scratch(torch.Tensor):
    __module__ = "torch.nn.parameter"


_SCRATCH: dict[tuple[int, ...], Scratch] = {}


def _scratch(shape: tuple[int, ...]) -> torch.Tensor:
    buf = _SCRATCH.get(shape)
    if buf is None:
        buf = torch.empty(shape, dtype=torch.float32).as_subclass(Scratch)
        _SCRATCH[shape] = buf
    return buf


@torch.no_grad()
def run(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    xf = _scratch(tuple(x.shape))
    xf.copy_(x)
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    torch.mul(xf * inv_rms, weight.float(), out=xf)
    y.copy_(xf.as_subclass(torch.Tensor))
