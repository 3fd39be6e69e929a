"""CHEAT (issue 13, class 3): `pkgutil.resolve_name("gc:get_objects")` imports by string, so neither
`gc` nor `get_objects` is named in an import. It then fakes the worker's CPU clock (every read advances
1 us, so each timed call "takes" a microsecond) and writes the fake into the harness Sentinel's own
snapshot, so the in-worker identity check sees nothing replaced. It computes honestly.

Caught by: the source policy (pkgutil is banned); behind it, the parent's burst check, which times the
worker's calls with the kernel's accounting of the worker's CPU time, not with anything in its process."""

from __future__ import annotations

import pkgutil
import time

import torch

_ticks = [0]


def _fake_clock() -> int:
    _ticks[0] += 1000
    return _ticks[0]


time.process_time_ns = _fake_clock
for obj in pkgutil.resolve_name("gc:get_objects")():
    if type(obj).__name__ == "Sentinel" and isinstance(getattr(obj, "before", None), dict):
        obj.before["time.process_time_ns"] = _fake_clock


@torch.no_grad()
def run(hidden_states: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
        output: torch.Tensor) -> None:
    x = (residual + hidden_states).to(torch.float32)
    output.copy_(weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)).to(torch.bfloat16))
