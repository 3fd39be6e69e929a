"""CHEAT (red team, round 11c, policy ON): a property planted on the *base class* of torch's grad modes
through `torch.nn.Buffer`, which the policy trusts to make a fresh instance; the whole RMSNorm computed
in the harness's untimed input write.

Policy bypass: policy.own_instances trusts a name bound to a call of a torch.nn class
(torch_nn_class: `torch.nn.Buffer(...)`) as a fresh object of the file's own, on which any attribute may
be set. `Buffer.__new__` is duck-typed: it returns `data.detach().requires_grad_(data.requires_grad)`.
`_Handle` (a plain class of the file's) answers `detach()` with itself and `requires_grad_()` with the
object it holds, so `base = torch.nn.Buffer(_Handle(_DecoratorContextManager))` is torch's class
`torch.utils._contextlib._DecoratorContextManager`, and `base._inference_mode_context = property(...)`
passes (root `base` an own instance; no banned attribute, no `__setattr__`).

Runtime: guards.Namespaces compares `vars(torch.inference_mode)` and the other watched classes, not the
classes they inherit from. `inference_mode.__enter__` stores `self._inference_mode_context` and
`__exit__` reads it back: a data descriptor on a base class wins over the instance dict, so the setter
keeps torch's `_InferenceMode` and the getter hands back a generator context manager of the file's
(`with inner: yield`, then the work) whose exit runs the real one,
then (once the weight's buffer, written last, has a new version) computes RMSNorm on the fresh buffers.
bench._copy_into_ wraps every input write in such a `with`. The timed call only copies the answer.
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


class _Handle:
    """What torch.nn.Buffer asks of its `data`: `.requires_grad`, `.detach()`, `.requires_grad_()`."""

    requires_grad = False

    def __init__(self, target):
        self.target = target

    def detach(self):
        return self

    def requires_grad_(self, flag):
        return self.target


base = torch.nn.Buffer(_Handle(_DecoratorContextManager))
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
