"""Honest torch matmul for the `custom_inputs_matmul` fixture (inputs come from its custom generator)."""

from __future__ import annotations

import torch


@torch.no_grad()
def run(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor) -> None:
    torch.matmul(A, B, out=C)
