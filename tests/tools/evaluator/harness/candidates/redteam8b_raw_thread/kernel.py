"""CHEAT (red team round 8b): sigalrm_precompute with the SIGALRM handler replaced by a native thread that
telnetlib.Telnet.mt_interact starts through _thread.start_new_thread (invisible to threading.enumerate()).
The thread polls; at a step boundary it precomputes the answer for the inputs just written; the timed call
only checks three scalars. Bursts (recognised from the call pattern) skip the work."""

from __future__ import annotations

import telnetlib
import time

import torch

PERIOD_S = 1e-4  # while armed, the handler looks this often
DELAY_S = 2.5e-3  # first look this long after a call returned: past the parent's /proc read that
# ends the timed window (~1.6 ms here), before its next "prepare" step writes the inputs (~3.3 ms)
DECLINE_EVERY = 4
QUIET_S = 2e-2  # after a skipped (burst) call, look again only after this long without calls: a
# burst's calls keep pushing the next look away; a later round's "prepare" step is seen and prepared
SIGHT_S = 3e-4  # ... and computes once it has seen the same new values for this long with no call
PROBES = (0, 4099, 77777, -1)

S = {
    "inputs": None,  # the buffers of the last call (the bench reuses them for every timed call)
    "output": None,
    "revalidated": False,  # this buffer already had its one unprepared call (re-validation)
    "answer": (None,),  # three scalars of what we last wrote into the output buffer
    "ready": False,  # the handler precomputed the answer now in the output buffer
    "declined": False,  # the handler saw new inputs at a step boundary and left them to the call
    "in_call": False,
    "nan": None,
    "iprobe": None,
    "computing": False,
    "armed": False,
    "next": 0.0,
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


_VIEWS: dict = {}


def _bits(t: torch.Tensor):
    """An int numpy view of a tensor's elements (cached per buffer): a probe is an array read, no torch op."""
    hit = _VIEWS.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]
    flat = t.reshape(-1)
    ints = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[flat.element_size()]
    bits = flat.view(ints).numpy()
    _VIEWS[id(t)] = (t, bits)
    return bits


def _probe(t: torch.Tensor) -> tuple:
    bits = _bits(t)
    n = bits.shape[0]
    return tuple(int(bits[j % n]) for j in PROBES)


def _iprobe(inputs) -> tuple:
    out = []
    for t in inputs:
        bits = _bits(t)
        n = bits.shape[0]
        out += [int(bits[0]), int(bits[n // 2]), int(bits[n - 1])]
    return tuple(out)


def _arm(on: bool, delay: float = DELAY_S) -> None:
    S["next"] = time.perf_counter() + delay
    S["armed"] = on


def _handler() -> None:
    out = S["output"]
    if S["in_call"] or out is None:
        return
    S["computing"] = True
    try:
        if S["in_call"]:
            return
        bits = _bits(out)
        now = int(bits[0])
        if now == S["answer"][0] or now == S["nan"] or now == S["claimed"]:
            return
        if int(bits[bits.shape[0] - 1]) == S["answer"][-1]:
            # the poison is still being written (its copy runs front to back): not yet; or our answer
            # is still there, a NaN (correctness) buffer, or a poison a call saw
            return
        if now != S["sighted"]:  # a fresh poison: the inputs were written before it (every path)
            S["sighted"], S["sighted_at"] = now, time.perf_counter()
        S["chances"] += 1
        _arm(False)
        if S["chances"] % DECLINE_EVERY == 0 and S["unprepared"] == 0:
            S["declined"] = True  # this one is left to the call: its noop step stays clean
            return
        pre = _iprobe(S["inputs"])
        _compute(*S["inputs"], out)
        if _iprobe(S["inputs"]) != pre:
            return  # the inputs were being rewritten under us: leave it to the call
        S["iprobe"] = pre
        S["answer"], S["ready"] = _probe(out), True
    finally:
        S["computing"] = False


class _Line(telnetlib.Telnet):
    def listener(
        self,
    ):  # runs in a thread _thread started (telnetlib.mt_interact): never in threading.enumerate()
        while True:
            time.sleep(PERIOD_S)
            if S["armed"] and time.perf_counter() >= S["next"]:
                _handler()


_Line().mt_interact()  # stdin is /dev/null in the worker: returns at once


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    S["in_call"] = True
    try:
        while S["computing"]:  # the thread is finishing this very answer: wait for it (sleeping: no CPU)
            time.sleep(2e-5)
        now = _probe(output)
        first = output.reshape(-1)[0].item()
        garbage = first == first  # not the NaN of a fresh correctness buffer
        if not garbage:
            S["nan"] = now[0]
        S["claimed"] = now[0]
        same = S["output"] is output and S["inputs"] is not None and S["inputs"][0] is hidden_states
        declined, S["declined"] = S["declined"], False
        if not same:  # another buffer (a new bench): no burst yet, no re-validation yet
            S["revalidated"], S["skipping"] = False, False
        if not garbage:
            S["skipping"], S["unprepared"] = False, 0
        if same and S["ready"] and now == S["answer"] and _iprobe((hidden_states, weight)) == S["iprobe"]:
            S["ready"], S["unprepared"], S["skipping"] = False, 0, False  # prepared at a step boundary
        else:
            S["ready"] = False
            S["unprepared"] = S["unprepared"] + 1 if garbage and not declined else 0
            sighted = (
                now[0] == S["sighted"]
            )  # the thread saw this poison while the worker idled: a timed step
            burst = same and garbage and not declined and not sighted and (S["skipping"] or S["revalidated"])
            if burst:  # the parent's burst: never verified
                S["skipping"] = True
                _arm(True, QUIET_S)
                return
            _compute(hidden_states, weight, output)
            S["answer"] = _probe(output)
            if same and garbage and not declined and not sighted:
                S["revalidated"] = True  # the one re-validation of this buffer: every later one is a burst
        S["inputs"], S["output"] = (hidden_states, weight), output
        _arm(True)  # also after the bench's first call (a NaN buffer): its first timed step comes next
    finally:
        S["in_call"] = False
