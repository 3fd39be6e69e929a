"""CHEAT: switches off the checks the worker runs on the candidate, then overwrites its input.

`Sentinel.violations` is replaced on the class (so the identity check that would notice replaced harness
functions never runs), and the worker module's `same_bits` / `output_violations` names are rebound, so
input mutation and output aliasing go unreported. The kernel normalises its input in place (the cheat
the official CLI missed). Only checks done outside the candidate's process survive this.
"""

from __future__ import annotations

import sys
from typing import Any

import torch


def _always_same(a: Any, b: Any) -> bool:
    return True


def _no_violations(*args: Any, **kwargs: Any) -> list[str]:
    return []


def _patch() -> None:
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] != "harness" and ".harness" not in name:
            continue
        sentinel = getattr(module, "Sentinel", None)
        if isinstance(sentinel, type):
            sentinel.violations = _no_violations
        if hasattr(module, "same_bits"):
            module.same_bits = _always_same
        if hasattr(module, "output_violations"):
            module.output_violations = _no_violations


_patch()


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
    hidden_states.copy_(normed)
    output.copy_(normed * weight.to(torch.float32))
