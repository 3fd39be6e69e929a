"""CHEAT (red team, round 11b, policy ON): `torch.Tensor.is_inference` replaced through a method of a
subclass called unbound, and RMSNorm's row scaling computed in the harness's untimed input write.

Policy bypass: `_Slot.plant(self, fn)` does `self.is_inference = fn` (policy.own_instance trusts a
method's first parameter), and it is called unbound as `_Planter.plant(torch.Tensor, _hook)`, `_Planter`
being an empty subclass. policy._foreign_self only looks for `Cls.method` where `method` is defined in
`Cls`'s own body (instance_methods), so a method inherited by a subclass (or reached through an alias
`P = _Slot`) is not "taken unbound".

Runtime: guards._watched() lists some torch.Tensor attributes (clone, copy_, ...) but not `is_inference`.
bench._copy_into_ (the untimed PREPARE step of host timing, the burst's perturbation twin, the
re-validation) runs `torch.inference_mode(dst.is_inference())` for each input buffer in order, so when it
asks the weight's buffer, the fresh hidden_states are already written: the hook computes x * rsqrt(mean(x^2))
there. The timed call only multiplies that by the weight (one bf16 pass instead of RMSNorm in float32).
"""

from __future__ import annotations

import torch

S = {"x": None, "w": None, "last": None, "R": None, "version": None, "busy": False}
_ORIGINAL = torch._C.TensorBase.is_inference


class _Slot:
    def plant(self, fn):
        self.is_inference = fn


class _Planter(_Slot):
    pass


def _scaled(x: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)).to(x.dtype)


def _hook(t):
    answer = _ORIGINAL(t)
    x = S["x"]
    if x is not None and t is S["w"] and not S["busy"] and S["version"] != x._version:
        S["busy"] = True
        try:
            with torch.no_grad():
                S["R"] = _scaled(x)
            S["version"] = x._version
        finally:
            S["busy"] = False
    return answer


_Planter.plant(torch.Tensor, _hook)


@torch.no_grad()
def run(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    if S["x"] is x and S["w"] is weight and S["version"] == x._version:
        torch.mul(S["R"], weight, out=y)  # the row scaling was done in the harness's untimed write
        return
    y.copy_(_scaled(x).float() * weight.float())
    if S["x"] is None and S["last"] is x:  # the bench's buffers: called twice
        S["x"], S["w"] = x, weight
    S["last"] = x
