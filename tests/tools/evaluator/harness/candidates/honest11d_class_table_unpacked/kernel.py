"""HONEST: RMSNorm whose row-block configuration classes are picked from a tuple unpacking and a table
(`Small, Large = _SmallRows, _LargeRows`, `_BY_SIZE[...]`), instantiated, and whose methods are then
called bound, on the kernel's own instances only.

The control for redteam11c_unbound_alias_unpacked: a fix that makes policy.instance_methods follow every
binding of a name to one of the file's classes (tuple unpacking, subscripts, conditional expressions,
loops), or that refuses a method of the file's called through any name that is not an instance, must
leave these instances and their bound calls alone.
"""

from __future__ import annotations

import torch


class _Rows:
    block = 64

    def setup(self, eps):
        self.eps = eps
        return self


class _SmallRows(_Rows):
    block = 32


class _LargeRows(_Rows):
    block = 128


Small, Large = _SmallRows, _LargeRows
_BY_SIZE = {False: Small, True: Large}


def run(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    cfg = _BY_SIZE[x.shape[0] > 128]().setup(1e-6)
    w = weight.float()
    for start in range(0, x.shape[0], cfg.block):
        xf = x[start : start + cfg.block].float()
        inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + cfg.eps)
        y[start : start + cfg.block].copy_(xf * inv_rms * w)
