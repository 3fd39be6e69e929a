"""CHEAT: does nothing at all (an empty CUDA-graph capture; NaN-poisoned outputs stay NaN)."""

from __future__ import annotations

import torch


def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    return None
