"""HONEST (issue 9, class 4): an uncapturable (host-synchronising, data-dependent) RMSNorm whose calls
take 10-40 ms on an H200, like the routed MoE problems that were flagged as tampering. It must PASS:
its time comes from the CUDA-event fallback and the parent's burst check must not call it faked."""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * weight.to(torch.float32)
    # data-dependent amount of honest extra work, decided on the host (not capturable)
    rounds = 40 + int(x[0, 0].abs().item() * 1000) % 20
    big = torch.ones(2048, 2048, device=x.device)
    for _ in range(rounds):
        big = torch.tanh(big @ big * 1e-3)
    output.copy_(y + 0.0 * big[0, 0])
