"""CHEAT (red team, round 11c, policy ON): a subclass of the file's own plain class whose `__new__` is a
class-body *assignment*, not a def; through its "instance" a property planted on the base class of
torch's grad modes; the whole RMSNorm computed in the harness's untimed input write.

Policy bypass: class_fields now takes a subclass of the file's own plain class as plain (round 11's
change), and `_plain_class` looks for construction hooks only among the class body's *defs*
(CONSTRUCTION_HOOKS): `__new__ = _target` (a plain function; `type` makes it the static `__new__`) is
not seen. So `base = _Slot()` is an own instance (own_instances), on which any attribute may be set, and
`_Slot()` returns torch's class `torch.utils._contextlib._DecoratorContextManager` (not a _Slot: no
__init__ runs). `base._inference_mode_context = property(...)` passes. (The same class-body `__new__ =`
on a class with no base passes too, and did before this round; the subclass is what this round opened.)

Runtime: as redteam11c_buffer_duck_context_property: guards.Namespaces compares vars(torch.inference_mode),
not its base's; `inference_mode.__enter__` stores `self._inference_mode_context` and `__exit__` reads it
back through the planted data descriptor, whose getter hands back a generator context manager of the
file's that exits the real `_InferenceMode`, then computes RMSNorm once the weight's buffer (written
last by bench._copy_into_) has a new version. The timed call only copies the answer.
"""

from __future__ import annotations

import contextlib

import torch
from torch.utils._contextlib import _DecoratorContextManager

S = {"bench": None, "last": None, "R": None, "key": None, "busy": False}
CONTEXTS: dict[int, object] = {}
EXITS: dict[int, object] = {}


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * weight.float()).to(x.dtype)


def _after_write() -> None:
    bench = S["bench"]
    if bench is None or S["busy"]:
        return
    x, weight = bench
    if S["key"] is not None and S["key"][1] == weight._version:
        return
    S["busy"] = True
    try:
        with torch.no_grad():
            S["R"] = _rmsnorm(x, weight)
        S["key"] = (x._version, weight._version)
    finally:
        S["busy"] = False


@contextlib.contextmanager
def _exits_then_computes(owner, inner):
    with inner:
        yield
    CONTEXTS.pop(owner, None)
    EXITS.pop(owner, None)
    _after_write()


def _get(mode):
    exits = EXITS.get(id(mode))
    if exits is None:
        exits = EXITS[id(mode)] = _exits_then_computes(id(mode), CONTEXTS[id(mode)])
    return exits


def _set(mode, value):
    CONTEXTS[id(mode)] = value
    EXITS.pop(id(mode), None)


def _target(cls):
    return _DecoratorContextManager


class _Config:
    eps = 1e-6


class _Slot(_Config):
    __new__ = _target  # not a def: _plain_class does not see it


base = _Slot()
base._inference_mode_context = property(_get, _set)


@torch.no_grad()
def run(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    bench = S["bench"]
    if bench is not None and bench[0] is x and S["key"] == (x._version, weight._version):
        y.copy_(S["R"])  # computed in the harness's untimed input write
        return
    y.copy_(_rmsnorm(x, weight))
    if S["last"] is x:  # the bench's buffers: called twice
        S["bench"] = (x, weight)
    S["last"] = x
