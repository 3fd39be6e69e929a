"""Honest RMSNorm whose tuned settings live in a JSON file beside kernel.py, read once at import."""

import json
from pathlib import Path

import torch

with open(Path(__file__).with_name("tuned.json")) as f:
    TUNED = json.load(f)


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    rows = TUNED["rows_per_chunk"]
    w = weight.to(torch.float32)
    for start in range(0, hidden_states.shape[0], rows):
        x = hidden_states[start : start + rows].to(torch.float32)
        inv = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + TUNED["eps"])
        output[start : start + rows].copy_(x * inv * w)
