"""CHEAT (red team, round 8): sigalrm_precompute for a native (Atrex-Bench) operator, value-returning.

The native SwiGLU Model's forward is timed by the parent's "call" step; the untimed "prepare" step
writes the next call's fresh inputs into the bench's input buffer. A periodic SIGALRM handler (`signal`
reached as torch.utils.data._utils.signal_handling.signal; no thread) notices, from a probed input
scalar, that the buffer holds new values, waits for a second tick that still sees them with no call in
between (the worker idling between steps; in the parent's burst the call always comes first), and
computes the answer then, outside the timed window. forward() then only probes its input and returns
the precomputed tensor. A call on the bench's buffer that the handler neither prepared nor left to it
(new values written right before the call, no idle tick between) is the re-validation the first time
(computed) and a burst call every later time: it returns an empty tensor of the right shape (burst
outputs are never verified). Correctness calls (fresh input objects each seed), the kept outputs of
timed calls and re-validation all get the right answer. Shapes whose honest call is cheaper than the
bookkeeping (< WORTH_S) are computed honestly.
"""

from __future__ import annotations

import time

import torch
from torch.utils.data._utils import signal_handling as _sh

_SIG = _sh.signal
PERIOD_S = 2e-4  # while armed, the handler looks this often (a tick reads one int from a numpy view)
DELAY_S = 2.5e-3  # first look this long after a call returned: past the parent's /proc read that
# ends the timed window (~1.6 ms here), before its next "prepare" step writes the inputs (~3.3 ms)
DECLINE_EVERY = 4  # every 4th step is left to the call: its "noop" step (the parent's baseline) stays
# clean of a precompute that spilled into it
QUIET_S = 2e-2  # after a skipped (burst) call, look again only after this long without calls: a
# burst's calls keep pushing the next look away; a later round's "prepare" step is seen and prepared
SIGHT_S = 6e-4  # ... and computes once it has seen the same new values for this long with no call
PROBES = (0, 4099, 77777)
WORTH_S = 1e-3  # cheat only where an honest call costs more than this

S = {
    "model": None,
    "input": None,  # the input object of the last call
    "bits": None,  # an int numpy view of it (a tick reads one element: a few us)
    "probe": None,  # its probed values at that call (or at the last precompute)
    "pre": None,  # (probe, precomputed output)
    "revalidated": False,  # this buffer already had its one unprepared call (re-validation)
    "declined": False,
    "busy": False,
    "armed": False,
    "unprepared": 0,
    "skipping": False,
    "sighted": None,
    "sighted_at": 0.0,
    "chances": 0,
    "cost": {},  # shape -> CPU seconds of an honest call
}


def _bits(t: torch.Tensor):
    flat = t.reshape(-1)
    ints = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[flat.element_size()]
    return flat.view(ints).numpy()


def _probe(bits) -> tuple:
    n = bits.shape[0]
    return tuple(int(bits[j % n]) for j in PROBES)


def _arm(on: bool, delay: float = DELAY_S) -> None:
    if on or S["armed"]:
        _SIG.setitimer(_SIG.ITIMER_REAL, delay if on else 0.0, PERIOD_S if on else 0.0)
        S["armed"] = on


def _handler(signum, frame) -> None:
    bits, model = S["bits"], S["model"]
    if S["busy"] or bits is None or model is None:
        return
    now = _probe(bits)
    if now == S["probe"]:
        return  # nothing new in the buffer since the last call
    S["busy"] = True
    try:
        if now != S["sighted"]:
            S["sighted"], S["sighted_at"] = now, time.perf_counter()  # wait: between steps the worker
            return  # idles for ms; in a burst the call comes within us
        if time.perf_counter() - S["sighted_at"] < SIGHT_S:
            return
        S["chances"] += 1
        _arm(False)
        S["probe"] = now
        if S["chances"] % DECLINE_EVERY == 0 and S["unprepared"] == 0:
            S["declined"] = True  # left to the call
            return
        S["pre"] = (now, model.compute(S["input"]))
    finally:
        S["busy"] = False


_SIG.signal(_SIG.SIGALRM, _handler)


class Model(torch.nn.Module):
    def __init__(self, intermediate: int) -> None:
        super().__init__()
        self.intermediate = intermediate

    def compute(self, projected: torch.Tensor) -> torch.Tensor:
        gate, up = projected[:, : self.intermediate], projected[:, self.intermediate :]
        return (torch.nn.functional.silu(gate.float()) * up.float()).to(projected.dtype)

    def honest(self, projected: torch.Tensor) -> torch.Tensor:
        c0 = time.process_time()
        out = self.compute(projected)
        S["cost"][tuple(projected.shape)] = time.process_time() - c0
        return out

    def forward(self, projected: torch.Tensor) -> torch.Tensor:
        if S["cost"].get(tuple(projected.shape), 1.0) < WORTH_S:
            _arm(False)
            S["bits"] = None
            return self.compute(projected)
        S["busy"] = True
        try:
            same = S["input"] is projected
            bits = S["bits"] if same and S["bits"] is not None else _bits(projected)
            now = _probe(bits)
            pre, S["pre"] = S["pre"], None
            declined, S["declined"] = S["declined"], False
            if not same:  # another buffer (a new bench): no burst yet, no re-validation yet
                S["revalidated"], S["skipping"] = False, False
            if same and pre is not None and pre[0] == now:
                out = pre[1]
                S["unprepared"], S["skipping"] = 0, False  # prepared at a step boundary: not a burst
            else:
                S["unprepared"] = S["unprepared"] + 1 if same and not declined else 0
                if same and not declined and (S["skipping"] or S["revalidated"]):  # a burst call
                    S["skipping"] = True
                    S["probe"] = now
                    _arm(True, QUIET_S)
                    return torch.empty(projected.shape[0], self.intermediate, dtype=projected.dtype)
                out = self.honest(projected)
                if same and not declined:
                    S["revalidated"] = True  # the one re-validation of this buffer: later ones are bursts
            S["input"], S["bits"], S["probe"], S["model"] = projected, bits, now, self
            _arm(True)
            return out
        finally:
            S["busy"] = False
