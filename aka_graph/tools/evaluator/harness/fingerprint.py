"""Did the kernel change its inputs? Without a clone of them (issue 9, class 2).

The worker checks every input for modification after each call. A bit-exact clone costs as much memory as
the inputs themselves, which for a 13 GB expert bank is what ran the GPU out of memory; so above the
memory plan's clone limit (memory.py) an input is compared through a fingerprint instead: per chunk of
its bits (as integers), their wrapping int64 sum and a position-weighted sum. Any single changed element
changes its chunk's plain sum; undoing that with other elements of the chunk while keeping the weighted
sum too takes deliberately crafted writes, not scratch use. The chunk size bounds the temporaries.
Identical bits always give identical fingerprints: no false alarm is possible.
"""

from __future__ import annotations

from typing import Any

import torch

from .layout import clone_values, writable
from .runner import same_bits

CHUNK = 1 << 22  # elements per chunk: the int64 temporaries stay at 32 MiB each
_SAME_SIZE_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_WEIGHTS: dict[tuple[str, int], torch.Tensor] = {}


def _weights(device: torch.device, n: int) -> torch.Tensor:
    key = (str(device), n)
    if key not in _WEIGHTS:
        _WEIGHTS.clear()  # one size per device at a time (the full chunk; a tail is sliced from it)
        _WEIGHTS[key] = torch.arange(n, device=device, dtype=torch.int64) * 2654435761 % 2147483629 + 1
    return _WEIGHTS[key]


def fingerprint(t: torch.Tensor) -> torch.Tensor:
    """[chunks, 2] int64 (sum, weighted sum) of `t`'s bits; an expanded tensor's compact base only."""
    flat = writable(t).detach().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.view(torch.int8)
    elif flat.dtype.is_complex:
        flat = torch.view_as_real(flat).reshape(-1)
    if flat.dtype.is_floating_point or flat.dtype not in _SAME_SIZE_INT.values():
        flat = flat.view(_SAME_SIZE_INT[flat.element_size()])
    chunks = max(1, -(-flat.numel() // CHUNK))
    out = torch.zeros((chunks, 2), dtype=torch.int64, device=flat.device)
    weights = _weights(flat.device, min(CHUNK, max(1, flat.numel())))
    for c in range(chunks if flat.numel() else 0):
        x = flat[c * CHUNK : (c + 1) * CHUNK].to(torch.int64, copy=True)  # never the input itself
        out[c, 0] = x.sum()
        out[c, 1] = (x.mul_(weights[: x.numel()])).sum()
    return out


class InputSnapshot:
    """The inputs as they were before a call: clones (bit-exact, small inputs) or fingerprints."""

    def __init__(self, values: list[Any], exact: bool) -> None:
        self.exact = exact
        self.before = clone_values(values) if exact else [_mark(v) for v in values]

    @classmethod
    def untouched(cls, values: list[Any]) -> InputSnapshot:
        """A bit-exact snapshot that is `values` themselves, no clone: for values the call never sees (the
        set whose copy was written into the buffers it is called on)."""
        snapshot = cls.__new__(cls)
        snapshot.exact, snapshot.before = True, list(values)
        return snapshot

    def changed(self, values: list[Any]) -> list[int]:
        """Indices of the tensors among `values` whose contents differ from the snapshot's."""
        found = []
        for i, (now, was) in enumerate(zip(values, self.before, strict=True)):
            if not isinstance(now, torch.Tensor):
                continue
            if not (same_bits(now, was) if self.exact else _same_mark(now, was)):
                found.append(i)
        return found


def _mark(v: Any) -> Any:
    return ((v.shape, v.dtype), fingerprint(v)) if isinstance(v, torch.Tensor) else None


def _same_mark(now: torch.Tensor, was: Any) -> bool:
    return was is not None and was[0] == (now.shape, now.dtype) and torch.equal(fingerprint(now), was[1])
