"""Honest RMSNorm in a package of its own: solution.json's entry point is pkg/kernel.py::run and the
math sits in pkg/helpers.py, imported relatively (SOL's driver imports the entry as `pkg.kernel` with the
staging directory on sys.path)."""

import torch

from .helpers import rms_norm_fp32


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    output.copy_(rms_norm_fp32(hidden_states, weight))
