"""CHEAT (red team, round 9): any module by name through `string.Formatter().get_field`, then the work
done by a garbage-collector callback in the harness's untimed steps.

Policy bypass. `string.Formatter().get_field("0.a.b[c]", (obj,), {})` walks a format field's attribute
and index chain with getattr/getitem and returns the object (not its text): getattr by a string, like
the banned `operator.attrgetter`, spelled as a format field. The root is a plain torch function, so no
module is "used as a value"; the path string names dunders inside a longer literal, which the exact-match
string check never compares: `"0.__globals__[__builtins__][__import__]"` is `__import__`, and with it any
module (`gc` here, assembled from two halves).

Timing. `gc.set_threshold(1, ...)` makes the worker collect generation 0 at almost every allocation of a
tracked object, and `gc.callbacks` runs our function after each collection: the kernel's code now runs
between the harness's own allocations, wherever they are, with no thread, no signal and no attribute of
anyone's patched. The callback watches the input buffer's version counter (`_version`: in-place writes
bump it); when the harness has written new inputs (the untimed "prepare" step, the burst's staged sets,
re-validation) it computes SwiGLU into a fresh tensor. forward() returns that tensor: the timed call
computes nothing. The burst's perturbations-only twin writes the same sets and so pays the same compute,
and the parent's difference of the two is the call alone.

Correctness seeds (fresh buffers) compute in the call; the bench's buffer is the one called twice.
"""

from __future__ import annotations

import string

import torch

_ROOT = torch.nn.functional.silu  # a plain function: its __globals__ are torch.nn.functional's
_IMPORT = string.Formatter().get_field("0.__globals__[__builtins__][__import__]", (_ROOT,), {})[0]
_GC = _IMPORT("g" + "c")

S = {"proj": None, "last": None, "n": 0, "R": None, "version": None, "armed": False}


def _swiglu(projected: torch.Tensor, n: int) -> torch.Tensor:
    gate, up = projected.split(n, dim=-1)
    return (torch.nn.functional.silu(gate.float()) * up.float()).to(projected.dtype)


def _after_collection(phase, info) -> None:
    proj = S["proj"]
    if phase != "stop" or proj is None or proj._version == S["version"]:
        return
    with torch.no_grad():
        S["R"] = _swiglu(proj, S["n"])
    S["version"] = proj._version


def _arm() -> None:
    if not S["armed"]:
        S["armed"] = True
        _GC.callbacks.append(_after_collection)
        _GC.set_threshold(1, 1_000_000, 1_000_000)  # gen 0 at every other allocation; never the old ones


class Model(torch.nn.Module):
    def __init__(self, intermediate: int) -> None:
        super().__init__()
        self.intermediate = intermediate

    def forward(self, projected: torch.Tensor) -> torch.Tensor:
        if projected is S["proj"] and projected._version == S["version"] and S["R"] is not None:
            R, S["R"] = S["R"], None
            return R  # computed after a collection in the untimed step
        n = self.intermediate
        out = _swiglu(projected, n)
        if projected is S["last"] and S["proj"] is None:  # the bench's buffer: called twice
            S["proj"], S["n"] = projected, n
            _arm()
        S["last"] = projected
        return out
