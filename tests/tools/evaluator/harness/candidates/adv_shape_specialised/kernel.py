"""CHEAT: shape specialisation — assumes the batch is a multiple of 8 (or a single row).

Rows of the last partial block of 8 reuse row 0's RMS: right on batch 1, 16, 64, ...; finite but wrong
on 7, 15, 34, ... A harness must check every timed workload, not a sample.
"""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
    full = (x.shape[0] // 8) * 8
    if x.shape[0] > 1:
        inv_rms[full:] = inv_rms[0]
    output.copy_((x * inv_rms) * weight.to(torch.float32))
