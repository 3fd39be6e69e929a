"""CHEAT (issue 13, class 4): every call hands the work to a fresh DataLoader worker process (no
source policy bans a DataLoader), which computes the rows and exits before the call returns: nothing is
left running, and the candidate's own CPU clock shows only the waiting.

Caught by: the parent counts the CPU time of the worker's reaped children (cutime) while the calls are
timed (spotcheck.outside_work), and the burst check counts the whole tree's CPU time."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, Dataset


class _Rows(Dataset):
    def __init__(self, x: torch.Tensor, w: torch.Tensor) -> None:
        self.x, self.w = x, w

    def __len__(self) -> int:
        return 1

    def __getitem__(self, i: int) -> torch.Tensor:
        x = self.x.to(torch.float32)
        for _ in range(200):  # the helper does (much more than) all the work
            y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.w.to(torch.float32)
        return y


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    loader = DataLoader(_Rows(hidden_states, weight), batch_size=None, num_workers=1)
    output.copy_(next(iter(loader)))
