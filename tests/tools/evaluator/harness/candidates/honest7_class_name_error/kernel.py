"""Honest RMSNorm that validates its arguments with the usual error message idiom."""

import torch


def _check(t: object) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"expected a tensor, got {t.__class__.__name__}")
    return t


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = _check(hidden_states).to(torch.float32)
    inv = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
    output.copy_(x * inv * _check(weight).to(torch.float32))
