"""Honest RMSNorm whose scale goes through an activation chosen by name from torch.nn.functional (an
author's variants differ only in ACTIVATION). The scale is positive, so relu leaves it unchanged."""

import torch
import torch.nn.functional as F

ACTIVATION = "relu"
_act = getattr(F, ACTIVATION)


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    scale = _act(torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5))
    output.copy_(x * scale * weight.to(torch.float32))
