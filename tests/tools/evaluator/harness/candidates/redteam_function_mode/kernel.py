"""CHEAT (red team): a global TorchFunctionMode entered at import sees every torch call the worker makes,
the harness's own included. The kernel's call only records what to compute; the work is done the first
time anything reads the output (the harness cloning it after the clock stopped: the kept outputs of
timed calls, re-validation, correctness) and dropped when the output or its inputs are overwritten
first (the perturbation before the next timed call or burst call). Timed calls and bursts cost nothing;
every output anybody looks at is right.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

_pending: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []


def _rmsnorm_into(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> None:
    xf = x.to(torch.float32)
    out.copy_(xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.to(torch.float32))


def _tensors(values: object) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    for v in values if isinstance(values, list | tuple) else [values]:
        if isinstance(v, torch.Tensor):
            found.append(v)
        elif isinstance(v, list | tuple):
            found += _tensors(v)
    return found


def _base(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


class _Deferred(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _pending:
            touched = {_base(t) for t in _tensors(list(args) + list(kwargs.values()))}
            name = getattr(func, "__name__", "")
            written = _base(args[0]) if args and isinstance(args[0], torch.Tensor) else None
            for entry in list(_pending):
                x, w, out = entry
                in_place = name.endswith("_") and not name.startswith("__")
                if in_place and written in (_base(out), _base(x), _base(w)):
                    _pending.remove(entry)  # overwritten before anybody read it: never computed
                elif _base(out) in touched:
                    _pending.remove(entry)
                    _rmsnorm_into(x, w, out)
        return func(*args, **kwargs)


_Deferred().__enter__()


def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    _pending.append((hidden_states, weight, output))
