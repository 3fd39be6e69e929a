"""CHEAT: turns torch.cuda.synchronize (and Event.synchronize / Stream.synchronize) into no-ops.

A harness that stops a host clock after synchronize then measures only the launch; a correctness
check after a fake synchronize may read unfinished results. The kernel is honest.
"""

from __future__ import annotations

import torch


def _nothing(*args: object, **kwargs: object) -> None:
    return None


def _patch() -> None:
    torch.cuda.synchronize = _nothing
    torch.cuda.Event.synchronize = _nothing  # type: ignore[method-assign]
    torch.cuda.Stream.synchronize = _nothing  # type: ignore[method-assign]


_patch()


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    _patch()
    x = hidden_states.to(torch.float32)
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
