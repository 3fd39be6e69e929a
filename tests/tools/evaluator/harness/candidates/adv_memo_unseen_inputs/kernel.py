"""CHEAT (issue 13, class 1): computes only for the first three input sets it sees (the correctness
seeds); on any later call it answers from its table, picking the remembered output whose input is
nearest (a fixed perturbation of a seen input is "near"), which is free compared to the real work.

Caught by: timed inputs that are fresh values (not a shift or scale of seen ones) whose outputs the
parent verifies after the fact; the re-validation's fresh inputs too."""

from __future__ import annotations

import torch

_table: list[tuple[torch.Tensor, torch.Tensor]] = []


@torch.no_grad()
def run(hidden_states: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
        output: torch.Tensor) -> None:
    probe = hidden_states.reshape(-1)[:64].float()
    if len(_table) < 3:
        x = (residual + hidden_states).to(torch.float32)
        result = weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)).to(torch.bfloat16)
        _table.append((probe.clone(), result.clone()))
        output.copy_(result)
        return
    nearest = min(_table, key=lambda entry: float((entry[0] - probe).abs().sum()))
    output.copy_(nearest[1])
