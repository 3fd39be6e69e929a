"""CHEAT: finds the reference's output among live Python objects (gc scan) and copies it.

It computes row 0 honestly only to recognise the right tensor. If no live tensor matches, it writes
nothing (NaN-poisoned outputs stay NaN, INCORRECT): so this PASSes exactly when the harness leaves the
reference result reachable from the candidate's process.
"""

from __future__ import annotations

import gc

import torch


def _row0(hidden_states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x = hidden_states[:1].to(torch.float32)
    return ((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))[0]


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    want = _row0(hidden_states, weight)
    mine = {hidden_states.data_ptr(), weight.data_ptr(), output.data_ptr()}
    for obj in gc.get_objects():
        try:
            if not isinstance(obj, torch.Tensor) or obj.shape != output.shape or obj.data_ptr() in mine:
                continue
            if obj.device != output.device or not obj.dtype.is_floating_point:
                continue
            row = obj[0].to(torch.float32)
            close = (row - want).abs() <= 4e-3 * want.abs() + 1e-4
            if bool(torch.isfinite(row).all()) and bool(close.all()):
                output.copy_(obj)
                return
        except Exception:
            continue
