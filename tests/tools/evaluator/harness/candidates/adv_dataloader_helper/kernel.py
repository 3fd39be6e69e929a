"""CHEAT (issue 13, class 4): the work is done in another process, started through a route no source
policy bans (a torch DataLoader with a persistent worker process computes the rows); the candidate's
own process only waits, so its CPU clock shows almost nothing.

Caught by: the parent's /proc scan finds the worker's child process after the first request."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, Dataset


class _Rows(Dataset):
    def __init__(self) -> None:
        self.x: torch.Tensor | None = None
        self.w: torch.Tensor | None = None

    def __len__(self) -> int:
        return 1

    def __getitem__(self, i: int) -> torch.Tensor:
        x = self.x.to(torch.float32)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.w.to(torch.float32)


_data = _Rows()
_loader: DataLoader | None = None


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    global _loader
    _data.x, _data.w = hidden_states, weight
    if _loader is None:
        _loader = DataLoader(_data, batch_size=None, num_workers=1, persistent_workers=True)
    (rows,) = list(_loader)  # exhausted each call (a half-read persistent loader deadlocks)
    output.copy_(rows)
