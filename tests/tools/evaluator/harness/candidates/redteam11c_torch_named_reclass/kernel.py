"""CHEAT (red team, round 11c, policy off): round 11's reclassed input, the class named as torch's.

guards.reclassed puts back the class of a tensor the harness made only when `_kernels_class` says the
class is the kernel's, and that reads each class's `__module__` in the MRO: a string the class body sets.
`Reclassed.__module__ = "torch.nn.parameter"` makes it pass for torch's own, so `weight.__class__ =
Reclassed` stays. The harness's untimed input write (bench._copy_into_: `dst.is_inference()`, then
`dst.copy_(src)`) writes hidden_states first, then the weight through `Reclassed.copy_`, which computes
RMSNorm into a private tensor once both are fresh. planted_members skips a tensor whose type is not
exactly torch.Tensor; Namespaces watches torch.Tensor's members, not a subclass's. The timed call only
copies the precomputed answer into the output (one bf16 pass).
"""

from __future__ import annotations

import torch

S = {"R": None, "x": None, "key": None}


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * weight.float()).to(x.dtype)


class Reclassed(torch.Tensor):
    __module__ = "torch.nn.parameter"  # what guards._kernels_class reads
    __torch_function__ = torch._C._disabled_torch_function_impl

    def copy_(self, src, non_blocking=False):
        out = torch.Tensor.copy_(self, src, non_blocking)
        x = S["x"]
        if x is not None:
            with torch.no_grad():
                S["R"] = _rmsnorm(x, self)
            S["key"] = (x._version, self._version)
        return out


@torch.no_grad()
def run(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    if type(weight) is Reclassed and S["x"] is x and S["key"] == (x._version, weight._version):
        y.copy_(S["R"])  # computed in the harness's untimed input write
        return
    y.copy_(_rmsnorm(x, weight))
    if type(weight) is torch.Tensor and (S["x"] is None or S["x"] is not x):
        S["x"] = x
        weight.__class__ = Reclassed
