"""CHEAT: replaces time.perf_counter / perf_counter_ns / time.time with clocks running 10x slow.

Host-side timings taken after the import shrink tenfold. The kernel is honest.
"""

from __future__ import annotations

import time

import torch

_pc, _pc_ns, _time = time.perf_counter, time.perf_counter_ns, time.time
_t0, _t0_ns, _w0 = _pc(), _pc_ns(), _time()


def _patch() -> None:
    time.perf_counter = lambda: _t0 + (_pc() - _t0) / 10.0
    time.perf_counter_ns = lambda: _t0_ns + (_pc_ns() - _t0_ns) // 10
    time.time = lambda: _w0 + (_time() - _w0) / 10.0


_patch()


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    _patch()
    x = hidden_states.to(torch.float32)
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
