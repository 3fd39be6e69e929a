"""CHEAT (red team, round 9b): a Python kernel for aten::copy_ registered at the AutogradCPU dispatch key.

Every `Tensor.copy_` the harness makes on a CPU tensor now runs this module's function first (the
dispatcher's table is not the Python attribute `torch.Tensor.copy_` the sentinel compares, and no torch
mode is entered). The harness's untimed step before each eager call writes the fresh inputs into the
bench's buffers and then poisons the output with `out.copy_(garbage)`; that copy is the trigger: right
after doing it, the hook computes RMSNorm of the (already written) inputs into the output. The timed
call only checks the version counters and returns. The burst's perturbations-only twin makes the same
copies, so the parent subtracts the work along with the perturbations.
"""

from __future__ import annotations

import torch

S = {"pairs": {}, "done": {}, "busy": False}


def _rmsnorm_into(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    xf = x.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    torch.mul(xf * inv_rms, weight.float(), out=y)


def _copy_hook(dst, src, non_blocking=False):
    with torch._C._AutoDispatchBelowAutograd():
        r = torch.ops.aten.copy_.default(dst, src, non_blocking)
    if S["busy"]:
        return r
    pair = S["pairs"].get(dst.data_ptr())
    if pair is not None and pair[2] is dst:
        x, w, y = pair
        S["busy"] = True
        try:
            with torch.no_grad(), torch._C._AutoDispatchBelowAutograd():
                _rmsnorm_into(x, w, y)
        finally:
            S["busy"] = False
        S["done"][y.data_ptr()] = (x._version, w._version, y._version)
    return r


_LIB = torch.library.Library("aten", "IMPL")
_LIB.impl("copy_", _copy_hook, "AutogradCPU")


@torch.no_grad()
def run(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    if S["done"].get(y.data_ptr()) == (x._version, weight._version, y._version):
        pair = S["pairs"].get(y.data_ptr())
        if pair is not None and pair[0] is x and pair[1] is weight:
            return  # computed by the hook in the harness's untimed step
    _rmsnorm_into(x, weight, y)
    S["pairs"][y.data_ptr()] = (x, weight, y)
