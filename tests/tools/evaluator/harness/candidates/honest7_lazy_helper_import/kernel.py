"""Honest RMSNorm that imports its helper module lazily, on the first call (a common way to keep import
time low or to pick a backend at run time)."""

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    from helpers import rms_norm_fp32

    output.copy_(rms_norm_fp32(hidden_states, weight))
