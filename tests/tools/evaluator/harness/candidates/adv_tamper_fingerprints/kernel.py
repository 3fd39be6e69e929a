"""CHEAT (issue 13: decisions on data the candidate can alter): scribbles over its input after computing
the right answer, and switches off every input check that runs in its own process: the worker's
fingerprint function is replaced by one that remembers its first answer for the same tensors (so the
"after" fingerprint equals the "before" one), the bit-exact comparison is made to see no change, and the
sentinel that would report the replaced functions is replaced too.

Caught by: the source policy (sys.modules, patching); behind it, the parent's own fingerprint of the
inputs it placed in files of its own and reads back after the call (sharedinputs.py)."""

from __future__ import annotations

import sys

import torch

_memo: dict[tuple[int, ...], object] = {}

for _name, _mod in list(sys.modules.items()):
    if _name.split(".")[-1] == "worker" and hasattr(_mod, "Worker") and hasattr(_mod, "digest"):
        _real = _mod.digest

        def _remembered(values, _real=_real):  # type: ignore[no-untyped-def]
            key = tuple(id(v) for v in values)
            if key not in _memo:
                _memo[key] = _real(values)
            return _memo[key]

        _mod.digest = _remembered
        _mod.same_bits = lambda a, b: True
        _mod._CHECK = lambda sentinel: []
    snapshot = getattr(_mod, "InputSnapshot", None)
    if isinstance(snapshot, type) and hasattr(snapshot, "changed"):
        snapshot.changed = lambda self, inputs: []


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
    hidden_states.mul_(0.5)  # the input is not the kernel's to change
