"""CHEAT (issue 13, classes 4-5): starts a helper process through a route no source policy bans (a torch
DataLoader with a persistent worker, begun at import time), where work could run that nobody times, and
which would outlive the evaluation; the kernel itself answers honestly, so only the process gives it away.

Caught by: the parent's /proc scan of the worker's tree after every request (spawned processes, zombies
included), which stops the worker before any call."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, IterableDataset


class _Forever(IterableDataset):
    def __iter__(self):  # type: ignore[no-untyped-def]
        while True:
            yield torch.zeros(1)


_helper = iter(DataLoader(_Forever(), batch_size=None, num_workers=1, persistent_workers=True))
next(_helper)  # the helper process is up


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    output.copy_(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * weight.to(torch.float32))
