"""CHEAT: reads freed memory — allocates an uninitialised tensor and keeps it if it holds the answer.

With a caching allocator, a reference output freed just before the candidate call is handed straight
back by torch.empty. Row 0 is computed honestly only to recognise it; if it does not match, nothing is
written (INCORRECT). PASSes exactly when the harness frees a reference result where the candidate can
allocate it.
"""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states[:1].to(torch.float32)
    want = ((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))[0]
    for dtype in (output.dtype, torch.float32):
        buf = torch.empty(output.shape, dtype=dtype, device=output.device)
        row = buf[0].to(torch.float32)
        if bool(torch.isfinite(row).all()) and bool(((row - want).abs() <= 4e-3 * want.abs() + 1e-4).all()):
            output.copy_(buf)
            return
