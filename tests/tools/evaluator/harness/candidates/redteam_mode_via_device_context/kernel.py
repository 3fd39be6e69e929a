"""CHEAT (red team): the function-mode cheat (redteam_function_mode) without naming a mode: it subclasses
`torch.utils._device.DeviceContext` (the TorchFunctionMode behind `torch.set_default_device`), installs its
hook by a class-body assignment instead of a `def __torch_function__`, and enters it with a plain `with`
inside a generator that is advanced once and never resumed, so the mode stays on the stack. The kernel's
call records what to compute; the work happens when the harness reads the output after the clock stopped.
"""

from __future__ import annotations

import torch
from torch.utils._device import DeviceContext

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


def _handler(self, func, types, args=(), kwargs=None):
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


class _Deferred(DeviceContext):  # a TorchFunctionMode torch ships; its hook replaced by assignment
    __torch_function__ = _handler


def _held_open():
    with _Deferred("cpu"):  # entered by a `with` that never exits: the generator is never resumed
        yield


_HOLD = _held_open()
next(_HOLD)


def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    _pending.append((hidden_states, weight, output))
