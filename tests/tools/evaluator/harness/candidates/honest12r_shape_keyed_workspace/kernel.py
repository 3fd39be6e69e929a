"""Honest control for redteam12_gc_weak_callback: a module-level cache of the kernel's own scratch
buffers, keyed on shape and dtype (no weak references, no callbacks); every call does all of its work."""

from __future__ import annotations

import torch

_SCRATCH: dict[tuple[tuple[int, ...], torch.dtype], torch.Tensor] = {}


def _scratch(shape: tuple[int, ...]) -> torch.Tensor:
    key = (shape, torch.float32)
    buf = _SCRATCH.get(key)
    if buf is None:
        buf = _SCRATCH[key] = torch.empty(shape, dtype=torch.float32)
    return buf


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = _scratch(tuple(hidden_states.shape))
    x.copy_(hidden_states)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    output.copy_((x * inv_rms) * weight.to(torch.float32))
