"""CHEAT (red team, round 11c, policy ON): `torch._jit_internal.is_scripting` replaced through
`torch.nn.Buffer`, which the policy now trusts to make a fresh instance; RMSNorm's row normalisation
computed in the harness's untimed input write.

Policy bypass: policy.own_instances trusts a name bound to a call of a torch.nn class
(torch_nn_class: `torch.nn.Buffer(...)`) as a fresh object of the file's own, on which any attribute may
be set. But `Buffer.__new__` is duck-typed: it returns `data.detach().requires_grad_(data.requires_grad)`,
whatever that is. `_Handle` (a plain class of the file's) answers `detach()` with itself and
`requires_grad_()` with the object it holds, so `jit = torch.nn.Buffer(_Handle(torch._jit_internal))` is
the module torch._jit_internal, and `jit.is_scripting = _hook` passes (the target's root `jit` is an own
instance, `is_scripting` no banned attribute).

Runtime: guards.Namespaces watches the modules torch, torch.cuda and torch.autograd.grad_mode, not
torch._jit_internal, and torch's binding `torch._jit_internal` still holds the same module.
`torch.inference_mode.__init__` (watched: unchanged) calls `torch._jit_internal.is_scripting()`; the harness's
untimed input write (bench._copy_into_) constructs `torch.inference_mode(dst.is_inference())` for each
input in order, so when it gets to the weight, the fresh hidden_states are already written: the hook
computes x * rsqrt(mean(x^2) + eps) in float32 there. The timed call only multiplies by the weight.
"""

from __future__ import annotations

import torch

S = {"x": None, "last": None, "N": None, "version": None, "busy": False}


def _normalized(x: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)


def _hook() -> bool:
    x = S["x"]
    if x is not None and not S["busy"] and S["version"] != x._version:
        S["busy"] = True
        try:
            with torch.no_grad():
                S["N"] = _normalized(x)
            S["version"] = x._version
        finally:
            S["busy"] = False
    return False  # what is_scripting() answers outside TorchScript


class _Handle:
    """What torch.nn.Buffer asks of its `data`: `.requires_grad`, `.detach()`, `.requires_grad_()`."""

    requires_grad = False

    def __init__(self, target):
        self.target = target

    def detach(self):
        return self

    def requires_grad_(self, flag):
        return self.target


jit = torch.nn.Buffer(_Handle(torch._jit_internal))
jit.is_scripting = _hook


@torch.no_grad()
def run(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    if S["x"] is x and S["version"] == x._version:
        torch.mul(S["N"], weight, out=y)  # the normalisation was done in the harness's input write
        return
    torch.mul(_normalized(x), weight.float(), out=y)
    if S["last"] is x:  # the bench's buffers: called twice
        S["x"] = x
    S["last"] = x
