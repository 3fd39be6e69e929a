"""Honest torch fused gate/up projection + GELU-tanh for the `gemma3_swiglu` fixture (one matmul)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


@torch.no_grad()
def run(x: torch.Tensor, gate_proj: torch.Tensor, up_proj: torch.Tensor, output: torch.Tensor) -> None:
    inter = gate_proj.shape[0]
    both = torch.matmul(x, torch.cat([gate_proj, up_proj], dim=0).t())
    gate, up = both[..., :inter], both[..., inter:]
    output.copy_(F.gelu(gate.float(), approximate="tanh").to(gate.dtype) * up)
