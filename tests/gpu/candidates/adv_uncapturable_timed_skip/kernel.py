"""CHEAT (CUDA, issue 13 class 1): makes itself uncapturable (a host sync), so it is timed per call in
the CUDA-event fallback where Python runs on every call; it computes for the first calls of a shape
(correctness, the bench's first calls) and for every call after the timed ones, and returns its last
answer for the timed calls in between.

Caught by: fresh inputs for each timed call and the parent's after-the-fact check of a random sample."""

from __future__ import annotations

import torch

_count: dict[tuple[int, ...], int] = {}
_last: dict[tuple[int, ...], torch.Tensor] = {}


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    key = tuple(hidden_states.shape)
    n = _count[key] = _count.get(key, 0) + 1
    _ = float(hidden_states[0, 0])  # a host sync: capture fails, the event fallback times each call
    if n <= 8 or n > 40 or key not in _last:
        x = hidden_states.to(torch.float32)
        _last[key] = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32)
    output.copy_(_last[key])
