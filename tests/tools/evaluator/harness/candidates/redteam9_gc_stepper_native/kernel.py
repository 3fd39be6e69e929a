"""NEAR-MISS (red team, round 9): SwiGLU computed by Python's garbage collector, between the harness's own
allocations, never in the timed call. Outcome: PASS with every output right and R returned by most timed
calls, but no fake speed-up (3.4-3.8 ms against an honest 1.0-1.4 ms on t300_i2816): each step costs a
collection and ~800 allocations (~50 us), and the "call" step's own tracked allocations (the runner's
contexts, nn.Module.__call__, the result list) each trigger one, on the clock. Pausing the stepper after
the computation (setting the count M below the threshold) does not work: the count is net of frees and
barely rises across a harness cycle, so the pause either ends inside the call step or outlasts the next
write. With `gc.set_threshold` (a ~1 us collection per step, no 800 allocations) the same scheme is
redteam9_format_field_gc, which gets `gc` through a policy bypass and PASSes at ~110 us.

No banned name, no attribute written, no thread, no signal, no policy bypass: a generator's `finally`, a
list that holds itself, and counting allocations.

CPython (3.11) runs a generation-0 collection inside whichever allocation of a GC-tracked object takes
the count (allocations less deallocations) above 700. A suspended generator with a `finally`, held only
by a list that holds itself, is garbage the next collection finalizes, and its `finally` runs then (PEP
442), inside the harness's allocation, wherever that is. Allocations made while a collection runs never
start another, so the `finally` can plant the next such generator and allocate K objects, which sets
when the next collection comes: K = 800 puts the count over the threshold (the very next tracked
allocation anywhere collects again: the worker is single-stepped by our code); K = 702 - M leaves M
allocations before the next one. (The objects are fresh 20-tuples of ints: beyond the tuple free lists,
so each counts, and untracked by the first collection that sees them, so they never pile up in the old
generation, whose full collection would clear the free lists and take the count back to 0.)

Each step reads the version counter of the bench's input buffer (`_version`: every in-place write bumps
it). When the harness has written new inputs (the untimed "prepare" step; a burst call's staged set;
re-validation), the step computes SwiGLU from the buffer into a new tensor, and then pauses for M
allocations, long enough to let the rest of "prepare", the "noop" and the whole "call" step by without
a collection (each costs ~50 us), short enough to be stepping again before the next write, in a timed
cycle or a burst's. forward() returns the precomputed tensor and allocates nothing.

The parent's burst is not fooled by skipping (its calls run on fresh staged sets whose outputs are
checked); here the burst's calls compute at their own input write like the timed ones, and its
perturbations-only twin writes the same sets, so the stepper computes there too: the parent's difference
of the two is the call alone, as reported. Correctness seeds come in fresh buffers and compute in the
call; the bench's buffer is the one called twice. A stall (the count taken low by a burst of frees)
is restarted by the next call, which then computes itself.
"""

from __future__ import annotations

from itertools import repeat

import torch

FINE = 800  # objects allocated in a step: the next tracked allocation collects again
M = 24  # after computing: this many allocations go by before the next collection
_T21, _TAIL = tuple(range(21)), slice(1, None)
S = {"proj": None, "last": None, "n": 0, "R": None, "version": None, "hold": None, "steps": 0, "junk": None}


def _swiglu(projected: torch.Tensor, n: int) -> torch.Tensor:
    gate, up = projected.split(n, dim=-1)
    return (torch.nn.functional.silu(gate.float()) * up.float()).to(projected.dtype)


def _on_close():
    try:
        yield
    finally:
        _step()


def _plant() -> None:
    g = _on_close()
    next(g)
    loop = [g]
    loop.append(loop)  # garbage once this returns: only the cycle holds it


def _step() -> None:
    """Runs inside a collection: compute if the buffer was written, plant the next step."""
    S["steps"] += 1
    proj = S["proj"]
    S["hold"] = None
    _plant()
    count = FINE
    if proj._version != S["version"]:
        with torch.no_grad():
            S["R"] = _swiglu(proj, S["n"])
        S["version"] = proj._version
        count = 702 - M
    S["hold"] = list(map(_T21.__getitem__, repeat(_TAIL, count)))  # no collection while this one runs


def _start() -> None:
    _plant()
    junk = []
    steps = S["steps"]
    while S["steps"] == steps:  # until the collection that runs the first step
        junk.append(iter(()))
    S["junk"] = junk  # kept: freeing it would take the count back down


class Model(torch.nn.Module):
    def __init__(self, intermediate: int) -> None:
        super().__init__()
        self.intermediate = intermediate

    def forward(self, projected: torch.Tensor) -> torch.Tensor:
        if projected is S["proj"] and S["R"] is not None and projected._version == S["version"]:
            R, S["R"] = S["R"], None
            return R  # computed by a collection in the untimed step
        n = self.intermediate
        out = _swiglu(projected, n)
        if projected is S["proj"] or (projected is S["last"] and S["proj"] is None):
            # the bench's buffer (called twice): its first call here, or a stalled stepper
            S["proj"], S["n"], S["version"] = projected, n, projected._version
            _start()
        S["last"] = projected
        return out
