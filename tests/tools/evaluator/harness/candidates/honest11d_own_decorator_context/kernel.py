"""HONEST: RMSNorm under a context manager / decorator of its own built on torch's
`_DecoratorContextManager` (the base of torch.no_grad and torch.inference_mode), which sets attributes on
its own instances, entered around torch.inference_mode.

The control for redteam11c_grad_mode_base_setattr: a fix that compares the members of every class in the
watched classes' MRO (torch.utils._contextlib._DecoratorContextManager included) must leave a subclass of
the kernel's own, and attributes set on its instances, alone.
"""

from __future__ import annotations

import torch
from torch.utils._contextlib import _DecoratorContextManager


class fp32_math(_DecoratorContextManager):
    """Float32 matmul precision 'highest' inside (a decorator too, as torch's grad modes are)."""

    def __enter__(self) -> None:
        self.previous = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("highest")

    def __exit__(self, *exc) -> None:
        torch.set_float32_matmul_precision(self.previous)


@fp32_math()
def _rmsnorm_into(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    xf = x.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    y.copy_(xf * inv_rms * weight.float())


def run(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    with torch.inference_mode(y.is_inference()):
        _rmsnorm_into(x, weight, y)
