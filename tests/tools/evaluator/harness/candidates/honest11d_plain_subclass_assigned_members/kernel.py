"""HONEST: RMSNorm configured by a small hierarchy of the file's own plain classes whose bodies assign
members (a constant, `__repr__ = _describe`), an instance of the subclass whose
attributes the kernel sets, and torch.inference_mode around the call.

The control for redteam11c_plain_subclass_new_assigned: a fix that makes policy._plain_class refuse
construction and lookup hooks bound by class-body assignment (`__new__ = f`), not only by `def`, must
leave these members (and the subclass's own instances) alone.
"""

from __future__ import annotations

import torch


def _describe(cfg) -> str:
    return f"RMSNorm(eps={cfg.eps}, upcast={cfg.upcast})"


class _Config:
    eps = 1e-6
    __repr__ = _describe

    def set_eps(self, eps):
        self.eps = eps


class _NormConfig(_Config):
    upcast = torch.float32


CFG = _NormConfig()
CFG.set_eps(1e-6)
CFG.upcast = torch.float32


def run(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    with torch.inference_mode(y.is_inference()):
        xf = x.to(CFG.upcast)
        inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + CFG.eps)
        y.copy_(xf * inv_rms * weight.to(CFG.upcast))
