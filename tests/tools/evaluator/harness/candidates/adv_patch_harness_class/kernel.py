"""CHEAT: patches a method of the harness's own timing class inside the worker (not a module-level
function, so an identity check of each harness module's callables does not see it).

`Bench.measure` is wrapped so every reported latency (and sample) is 2.5x smaller; the kernel itself is
honest torch, so correctness passes and the campaign would see a fake 2.5x speed-up. Timing code that
runs in the candidate's process must be verified too (class dicts, the stdlib helpers it uses), or the
latency must be cross-checked from outside the worker.
"""

from __future__ import annotations

import sys
from typing import Any

import torch


def _patch() -> None:
    for name, module in list(sys.modules.items()):
        cls = getattr(module, "Bench", None)
        if name.split(".")[-1] != "bench" or not isinstance(cls, type) or hasattr(cls, "_aka_patched"):
            continue
        real = cls.measure

        def measure(self: Any, _real: Any = real) -> Any:
            timing = _real(self)
            timing.latency_us /= 2.5
            timing.samples_us = [s / 2.5 for s in timing.samples_us]
            return timing

        cls.measure = measure
        cls._aka_patched = True


_patch()


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
