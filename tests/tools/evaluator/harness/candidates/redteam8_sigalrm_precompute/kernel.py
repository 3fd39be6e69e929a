"""CHEAT (red team, round 8): the work of every parent-timed host call is done *before* the call, by a
SIGALRM handler that runs while the worker idles between the parent's steps; the parent's plausibility
burst (never verified) is recognised from the call pattern alone and skips the work.

Trick 1 (timed calls). On a host the parent times each "call" step from /proc (hostclock.py) and
nothing else: the "prepare" step (fresh inputs written, output buffer poisoned) is untimed, and between
steps the worker sits in os.read on the step pipe. A periodic ITIMER_REAL timer interrupts that read
(a Python signal handler runs on EINTR; PEP 475 retries the read, so the protocol never notices). When
the handler sees that our last answer in the output buffer was overwritten by poison (every path writes
the inputs first and poisons the outputs last: fresh sets, burst perturbation, re-validation) and sees
the same poison again >= SIGHT_S later with no call in between (the worker is idle: a step boundary),
it computes the answer for the inputs now in the buffers, right into the output buffer. The timed call
then only checks that its buffer still holds that precomputed answer (three scalars) and returns. Every
output anybody reads is right (correctness, the kept outputs of timed calls, re-validation): only the
*timing* moves out of the call window, onto the worker's idle time. One step in four is left to the
call, so at least one "noop" step (the parent's baseline, the cheapest noop) is not inflated by a
precompute that spilled into it.

`signal` is a banned module, but it is reached as an attribute of torch.utils.data._utils.signal_handling
(policy.FOREIGN_MODULES deliberately leaves "signal" out); a signal handler is not a thread, so
"threads left running" never fires.

Trick 2 (burst). The burst runs perturbation + call back to back inside one request (a precompute would
be counted there, and the handler never sees an idle tick between them). A call on the bench's buffers
that the handler neither prepared nor left to it (values written right before the call) is the
re-validation the first time (computed: fresh values, checked by the parent) and a burst call every
later time: it returns without writing anything, as does every call after it until the handler prepares one
again (burst outputs are never verified).
"""

from __future__ import annotations

import time

import torch
from torch.utils.data._utils import signal_handling as _sh

_SIG = _sh.signal
PERIOD_S = 2e-4  # while armed, the handler looks this often
DELAY_S = 2.5e-3  # first look this long after a call returned: past the parent's /proc read that
# ends the timed window (~1.6 ms here), before its next "prepare" step writes the inputs (~3.3 ms)
DECLINE_EVERY = 4
QUIET_S = 2e-2  # after a skipped (burst) call, look again only after this long without calls: a
# burst's calls keep pushing the next look away; a later round's "prepare" step is seen and prepared
SIGHT_S = 6e-4  # ... and computes once it has seen the same new values for this long with no call
PROBES = (0, 4099, 77777)

S = {
    "inputs": None,  # the buffers of the last call (the bench reuses them for every timed call)
    "output": None,
    "revalidated": False,  # this buffer already had its one unprepared call (re-validation)
    "answer": (None,),  # three scalars of what we last wrote into the output buffer
    "ready": False,  # the handler precomputed the answer now in the output buffer
    "declined": False,  # the handler saw new inputs at a step boundary and left them to the call
    "busy": False,
    "armed": False,
    "skipping": False,
    "unprepared": 0,
    "sighted": None,
    "sighted_at": 0.0,
    "claimed": None,
    "chances": 0,
}


def _compute(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    output.copy_((x * inv_rms) * weight.to(torch.float32))


def _probe(t: torch.Tensor) -> tuple:
    flat = t.reshape(-1)
    n = flat.numel()
    return tuple(flat[j % n].item() for j in PROBES)


def _arm(on: bool, delay: float = DELAY_S) -> None:
    if on or S["armed"]:
        _SIG.setitimer(_SIG.ITIMER_REAL, delay if on else 0.0, PERIOD_S if on else 0.0)
        S["armed"] = on


def _handler(signum, frame) -> None:
    out = S["output"]
    if S["busy"] or out is None:
        return
    S["busy"] = True
    try:
        now = out.reshape(-1)[0].item()
        if now == S["answer"][0] or now != now or now == S["claimed"]:
            return  # our answer is still there, a NaN (correctness) buffer, or a poison a call saw
        if now != S["sighted"]:
            S["sighted"], S["sighted_at"] = now, time.perf_counter()  # a fresh poison: wait. Between
            return  # steps the worker idles for ms; in a burst the call comes within us (and claims it)
        if time.perf_counter() - S["sighted_at"] < SIGHT_S:
            return
        S["chances"] += 1
        _arm(False)
        if S["chances"] % DECLINE_EVERY == 0 and S["unprepared"] == 0:
            S["declined"] = True  # this one is left to the call: its noop step stays clean
            return
        _compute(*S["inputs"], out)
        S["answer"], S["ready"] = _probe(out), True
    finally:
        S["busy"] = False


_SIG.signal(_SIG.SIGALRM, _handler)


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    S["busy"] = True
    try:
        now = _probe(output)
        garbage = now[0] == now[0]  # not the NaN of a fresh correctness buffer
        S["claimed"] = now[0]
        same = S["output"] is output and S["inputs"] is not None and S["inputs"][0] is hidden_states
        declined, S["declined"] = S["declined"], False
        if not same:  # another buffer (a new bench): no burst yet, no re-validation yet
            S["revalidated"], S["skipping"] = False, False
        if not garbage:
            S["skipping"], S["unprepared"] = False, 0
        if same and S["ready"] and now == S["answer"]:
            S["ready"], S["unprepared"], S["skipping"] = False, 0, False  # prepared at a step boundary
        else:
            S["ready"] = False
            S["unprepared"] = S["unprepared"] + 1 if garbage and not declined else 0
            burst = same and garbage and not declined and (S["skipping"] or S["revalidated"])
            if burst:  # the parent's burst: never verified
                S["skipping"] = True
                _arm(True, QUIET_S)
                return
            _compute(hidden_states, weight, output)
            S["answer"] = _probe(output)
            if same and garbage and not declined:
                S["revalidated"] = True  # the one re-validation of this buffer: every later one is a burst
        S["inputs"], S["output"] = (hidden_states, weight), output
        _arm(True)  # also after the bench's first call (a NaN buffer): its first timed step comes next
    finally:
        S["busy"] = False
