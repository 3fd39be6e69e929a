"""Red team round 12: a canary for kernel code run by the cyclic collector in the harness's untimed steps.

The mechanism of redteam12_gc_generator_finally (a generator's `finally` block, run when the collector
frees the reference cycle it sits in; kept "hot" by empty dicts, which count towards the collector's
threshold without being tracked), without the cheat: outside a call, the block records the version
counters of every timing buffer that holds values the kernel was not yet called on. A call that then
finds its buffers at exactly those versions was preceded by a run of the block that saw its inputs (the
moment a cheat computes the answer untimed); from then on every call writes zeros. So this candidate
PASSes exactly when no such moment is reachable.
"""

from __future__ import annotations

import torch

# pointer -> (input buffers, their versions when last called on)
_SEEN: dict[int, tuple[torch.Tensor, torch.Tensor, tuple[int, int]]] = {}
_FRESH: dict[int, tuple[int, int]] = {}  # pointer -> versions the block saw before any call on them
_STATE = {"in_call": False, "armed": False, "fired": False, "saw_fresh_inputs": False}
_BALLAST: list[list[object]] = []
HOT = 900  # well over the collector's threshold (700): the next allocation anywhere collects again


def _sleeper(box: list[object]):
    try:
        yield box
    finally:
        _fired()


def _arm(ballast: int) -> None:
    box: list[object] = []
    gen = _sleeper(box)
    next(gen)
    box.append(gen)  # the generator's frame holds the box, the box holds the generator: a cycle
    _STATE["armed"] = True
    _BALLAST.clear()
    if ballast:
        _BALLAST.append([{} for _ in range(ballast)])


def _versions(x: torch.Tensor, w: torch.Tensor) -> tuple[int, int]:
    try:
        return (x._version, w._version)
    except RuntimeError:  # inference tensors keep no version counter
        return (-1, -1)


def _fired() -> None:
    _STATE["armed"] = False
    _STATE["fired"] = True
    if _STATE["in_call"]:
        _arm(0)
        return
    for ptr, (x, w, at_call) in _SEEN.items():
        v = _versions(x, w)
        if v[0] >= 0 and v[0] != at_call[0] and v[1] != at_call[1]:
            _FRESH[ptr] = v
    _arm(0 if _STATE["saw_fresh_inputs"] else HOT)


def _heat() -> None:
    if not _STATE["armed"]:
        _arm(0)
    _STATE["fired"] = False
    spare: list[object] = []
    for _ in range(2 * HOT):
        spare.append({})
        if _STATE["fired"]:
            break
    _BALLAST.append(spare)


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    _STATE["in_call"] = True
    repeat = False
    try:
        ptr = hidden_states.data_ptr()
        seen = _SEEN.get(ptr)
        repeat = seen is not None and seen[0] is hidden_states and seen[1] is weight
        if repeat:
            for p in [p for p, s in _SEEN.items() if s[0].shape != hidden_states.shape]:
                del _SEEN[p]
        v = _versions(hidden_states, weight)
        if repeat and v[0] >= 0 and _FRESH.get(ptr) == v:
            _STATE["saw_fresh_inputs"] = True  # the block ran between the write of these inputs and now
        _SEEN[ptr] = (hidden_states, weight, v)
        if _STATE["saw_fresh_inputs"]:
            output.zero_()
            return
        x = hidden_states.to(torch.float32)
        inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
        output.copy_((x * inv_rms) * weight.to(torch.float32))
    finally:
        _STATE["in_call"] = False
        if repeat and not _STATE["saw_fresh_inputs"]:
            _heat()
