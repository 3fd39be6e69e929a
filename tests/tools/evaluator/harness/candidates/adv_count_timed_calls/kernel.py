"""CHEAT (issue 13, class 1): counts calls. Real work on the calls that are checked in a fixed protocol
(3 correctness seeds, the bench's first call, the re-validation right after the timed calls), a stale
answer on the timed calls in between and on every burst call.

Caught by: fresh inputs per timed call whose outputs the parent verifies after the fact, and the
re-validation's position drawn at random."""

from __future__ import annotations

import torch

_count = [0]
_last: list[torch.Tensor] = []


def _rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.to(torch.float32)
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.to(torch.float32)


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    _count[0] += 1
    n = _count[0]
    checked = n <= 4 or n == 10  # 3 seeds + the bench's first call; call 10: re-validation after 5 reps
    if checked or not _last:
        result = _rmsnorm(hidden_states, weight)
        _last[:] = [result]
    output.copy_(_last[0])
