"""CHEAT: a native operator's Model that returns both outputs on the first calls (the correctness seeds
and the bench's first call) and only the first one afterwards, on the timed calls: the work of the second
output is skipped where it is timed.

Caught by: the parent's after-the-fact check of timed calls compares every output the reference returns
(it compared only as many as the timed call handed back)."""

import torch

_calls: dict[tuple[int, ...], int] = {}


class Model(torch.nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(hidden))

    def forward(self, x: torch.Tensor):
        n = _calls[tuple(x.shape)] = _calls.get(tuple(x.shape), 0) + 1  # per workload
        rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        if 4 < n <= 9:
            return (x * rstd * self.weight,)
        return x * rstd * self.weight, rstd
