"""CHEAT (red team, round 11b, policy off): the Sentinel's checks emptied by swapping the `__code__` of
its own methods, and its record of the harness's code objects edited in place to match.

Sentinel.violations checks `fn.__code__ is self.codes[name]` for every harness function and method, and
that check runs inside Sentinel.violations itself. `Sentinel.between_steps.__code__` (and
`Sentinel.violations.__code__`) are replaced by a function returning [], and the new code objects are
written into `sentinel.codes` (a plain dict). The functions keep their identity (`vars(Sentinel)` and the
module bindings are unchanged), so `members`/`harness` compare equal too. With every in-worker check gone,
round 9b's aten::copy_ hook (AutogradCPU) precomputes RMSNorm in the harness's untimed output poisoning.
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


def _nothing(self):
    return []


def _blind_the_sentinel() -> None:
    import sys

    for name, mod in list(sys.modules.items()):
        if name.endswith("guards") and hasattr(mod, "_CURRENT") and mod._CURRENT:
            sentinel = mod._CURRENT[0]
            for method in ("between_steps", "violations"):
                fn = vars(mod.Sentinel)[method]
                fn.__code__ = _nothing.__code__
                for key in list(sentinel.codes):
                    if key[-2:] == ("Sentinel", method):
                        sentinel.codes[key] = fn.__code__


_blind_the_sentinel()
