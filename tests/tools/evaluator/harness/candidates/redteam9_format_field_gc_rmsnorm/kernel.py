"""CHEAT (red team, round 9): redteam9_format_field_gc for aka_graph/examples/rmsnorm (destination-passing).

`__import__` through `string.Formatter().get_field` (a format field's getattr/getitem chain by string),
`gc.set_threshold(1, ...)` and a `gc.callbacks` hook: after each collection (at almost every allocation
the harness makes) the hook looks at the inputs' version counters and, when the harness has written new
values into the bench's buffers, computes RMSNorm into a private tensor. The call only copies that into
the output the harness handed it (one bf16 pass instead of the float32 RMSNorm). The harness poisons the
output after writing the inputs and allocates nothing before the call, so the copy stays in the call.
"""

from __future__ import annotations

import string

import torch

_ROOT = torch.nn.functional.silu
_IMPORT = string.Formatter().get_field("0.__globals__[__builtins__][__import__]", (_ROOT,), {})[0]
_GC = _IMPORT("g" + "c")

S = {"bench": None, "last": None, "R": None, "versions": None, "armed": False}


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    return (xf * inv_rms * weight.float()).to(x.dtype)


def _after_collection(phase, info) -> None:
    bench = S["bench"]
    if phase != "stop" or bench is None:
        return
    x, weight = bench
    versions = (x._version, weight._version)
    if versions != S["versions"]:
        with torch.no_grad():
            S["R"] = _rmsnorm(x, weight)
        S["versions"] = versions


@torch.no_grad()
def run(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    bench = S["bench"]
    if bench is not None and bench[0] is x and S["versions"] == (x._version, weight._version):
        y.copy_(S["R"])  # computed after a collection in the untimed step
        return
    y.copy_(_rmsnorm(x, weight))
    if bench is None and S["last"] is x:  # the bench's buffers: called twice
        S["bench"] = (x, weight)
        if not S["armed"]:
            S["armed"] = True
            _GC.callbacks.append(_after_collection)
            _GC.set_threshold(1, 1_000_000, 1_000_000)
    S["last"] = x
