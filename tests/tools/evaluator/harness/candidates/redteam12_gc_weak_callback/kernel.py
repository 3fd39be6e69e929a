"""Red team round 12: the work done in the harness's untimed steps, by a weak-reference callback.

`import weakref` is refused by the policy, but torch re-exports the type: `torch.utils.weak.WeakIdRef(obj,
callback)` is a `weakref.ref` that takes a callback. The kernel keeps such a reference to an object in a
reference cycle of its own; the interpreter's cyclic collector (never called by the kernel: it runs on its
own every ~700 allocations) frees the cycle wherever the process happens to be, which is mostly inside the
harness's untimed steps, and then calls the callback. The callback re-arms itself (a new cycle, and a few
hundred live allocations so the next collection comes soon), looks at the input buffers it saw in earlier
calls and, when their values changed (the harness wrote a fresh set), computes the RMSNorm for them into a
cache. The timed call only copies the cached answer out when the buffers still hold what it was computed
for (their version counters), else it does the work itself. Outputs are right on every call.

The parent's burst check subtracts a burst of the perturbations alone, in which the same fresh sets are
written into the same buffers: the callback does the same precomputation there, so it is subtracted as
the harness's own perturbation cost.
"""

from __future__ import annotations

import torch
from torch.utils.weak import WeakIdRef

_SEEN: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # input buffers by their pointers
_CACHE: dict[int, tuple[tuple[int, int], torch.Tensor]] = {}  # pointer -> (versions, answer)
_STATE = {"in_call": False}
_ARMED: list[object] = []  # the live weak references (a callback needs its reference alive)
_BALLAST: list[list[object]] = []  # live allocations: they bring the next collection closer
BALLAST = 700  # about the collector's threshold (700): a collection comes after a few more allocations


class _Node:
    def __init__(self) -> None:
        self.loop = self  # a reference cycle: only the cyclic collector frees it


def _rms(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.to(torch.float32)
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return ((xf * inv_rms) * w.to(torch.float32)).to(x.dtype)


def _versions(x: torch.Tensor, w: torch.Tensor) -> tuple[int, int]:
    try:
        return (x._version, w._version)
    except RuntimeError:  # inference tensors keep no version counter
        return (-1, -1)


def _precompute() -> None:
    for ptr, (x, w) in list(_SEEN.items()):
        v = _versions(x, w)
        if v[0] < 0:
            continue
        hit = _CACHE.get(ptr)
        if hit is not None and hit[0] == v:
            continue
        with torch.inference_mode(False), torch.no_grad():
            _CACHE[ptr] = (v, _rms(x, w))


def _arm(hot: bool) -> None:
    node = _Node()
    _ARMED.append(WeakIdRef(node, _fired))
    _BALLAST.clear()
    if hot:
        _BALLAST.append([[] for _ in range(BALLAST)])


def _fired(ref: object) -> None:
    if ref in _ARMED:
        _ARMED.remove(ref)
    if not _STATE["in_call"]:
        _precompute()
    _arm(hot=not _STATE["in_call"])


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    _STATE["in_call"] = True
    try:
        ptr = hidden_states.data_ptr()
        hit = _CACHE.get(ptr)
        seen = _SEEN.get(ptr)
        if (
            hit is not None
            and seen is not None
            and seen[0] is hidden_states
            and seen[1] is weight
            and hit[0] == _versions(hidden_states, weight)
            and hit[0][0] >= 0
        ):
            output.copy_(hit[1])
            return
        _SEEN[ptr] = (hidden_states, weight)
        output.copy_(_rms(hidden_states, weight))
    finally:
        _STATE["in_call"] = False
        if not _ARMED:
            _arm(hot=True)
