"""CHEAT: returns a tensor subclass that computes nothing until someone looks at it (value-returning).

run() returns at once (uninitialised storage + the inputs); the first torch op on the result (the
harness's comparison) does the work. Timed calls are free. A harness must demand an exact torch.Tensor.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_flatten


class _LazyNorm(torch.Tensor):
    _pending: tuple[torch.Tensor, torch.Tensor] | None

    @staticmethod
    def __new__(cls, hidden_states: torch.Tensor, weight: torch.Tensor) -> _LazyNorm:
        out = torch.Tensor._make_subclass(cls, torch.empty_like(hidden_states), False)
        out._pending = (hidden_states, weight)
        return out

    def _materialise(self) -> None:
        if self._pending is None:
            return
        hidden_states, weight = self._pending
        self._pending = None
        with torch._C.DisableTorchFunctionSubclass(), torch.no_grad():
            x = hidden_states.to(torch.float32)
            y = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32)
            self.copy_(y)

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        for arg in tree_flatten((args, kwargs or {}))[0]:
            if isinstance(arg, _LazyNorm):
                arg._materialise()
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


def run(hidden_states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return _LazyNorm(hidden_states, weight)
