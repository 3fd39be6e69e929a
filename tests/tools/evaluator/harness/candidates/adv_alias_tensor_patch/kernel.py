"""CHEAT (issue 13, class 3): patches torch through aliases, so no `torch.x = ...` and no `getattr` call
with a computed name appears: `getattr` is bound to another name, `torch.Tensor` too, and the in-worker
mutation check's comparison is replaced through the alias; then it normalises in place of its input.

Caught by: the source policy (getattr as a value, assignment through an alias)."""

from __future__ import annotations

import torch

fetch = getattr
T = fetch(torch, "Tensor")
T.equal = lambda self, other: True  # every "unchanged?" comparison now says yes


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states
    x.mul_(torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype))  # mutates the input
    output.copy_(x * weight)
