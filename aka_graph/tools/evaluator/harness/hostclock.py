"""Host timing measured by the trusted parent, one call at a time (issue 13; finding F13).

Host timing used to be a loop in the worker that read the process's CPU clock around each call and sent
the samples back. Everything in that process is within the candidate's reach: a kernel that walked the
stack frames to the loop's `samples` list and shrank them 3x passed the parent's burst check about half
the time (the burst's estimate of a ~30 us call drowns in its subtracted baseline's noise).

Here the parent drives the timed calls itself, one step at a time over the channel's pipes, and reads
the worker's CPU time (its whole process tree, from /proc: proctree.tree_cpu_pair) before and after each
"call" step. The latency it records is that reading less the cheapest of the empty steps interleaved
with the calls (a step's own cost), so it never comes from the worker. The worker still reads its own
clock around the call; the parent only compares: an honest reading lies inside the parent's window and
so cannot be much below it, and one far below it (beyond the steps' own jitter) is a tampered one.

Two things keep an honest kernel from being called a fake (CI, rounds 15 and 16: honest calls read
143 against 277 us and 326 against 437 us, 5 pairs each, on a loaded host):
- Linux adds a running thread's CPU time since its last scheduler event to the figure another process
  reads only at the next such event (thread_group_cputime skips the pending time of tasks that are not
  the reader's). A step's time read while the worker is still on its way back to the pipe lands in the
  next step's window, a noop's in the call's. The parent therefore reads only once the worker is off the
  CPU (proctree.tree_cpu_pair waits for that): its time is then booked.
- A round's 5 pairs are few: a finding is only a dispute. The workload is timed again (modes.py) with
  the pairs of every round pooled (`ClockPairs`); an honest round under noise is outvoted by the next,
  while a fake shrinks every reading of every round.

What this cannot see: work moved out of the call window by the candidate (computed ahead, in another
thread, or in another process): threads left running, other processes' CPU time (spotcheck.outside_work)
and the after-the-fact verification of timed calls' outputs are the checks for those.
"""

from __future__ import annotations

import os
import select
import statistics
import struct
import time
from collections.abc import Callable
from typing import Any

from .proctree import cpu_delta_ns
from .timing import HOST_REPS, summarize

# The worker's own reading may be this fraction of the parent's before it is a fake. A multi-threaded CPU
# call reads up to a quarter below the parent's paired reading (its intra-op threads spin on past the
# worker's own clock; CI, round 15: 325.8 against 436.9 us, an honest index_add_ and matmul); the fakes
# measured hide 43-61 % of the call.
TAMPER_RATIO = 0.65
SLACK_US = 15.0  # and at least this far below it: a step's jitter beyond its noop's, measured at < 8 us
Clock = Callable[[], Any]  # (precise, coarse) CPU ns of the worker's tree, or None

# The steps go over the channel's own pipes as fixed 16-byte frames, not as messages: a message costs the
# worker ~0.5 ms of CPU (torch.save headers) with ~0.1 ms of jitter, which would drown a 30 us call.
STEP = struct.Struct("<cxxxxxxxq")  # parent -> worker: op, timed call index
ANSWER = struct.Struct("<cxxxxxxxd")  # worker -> parent: b"k" or b"e", the worker's own reading (us)
PREPARE, NOOP, CALL, FINISH = b"p", b"n", b"c", b"f"
OK, FAILED = b"k", b"e"


def read_exact(fd: int, n: int, timeout_s: float | None) -> bytes | None:
    """n bytes from `fd`; b"" at end of file (the writer died), None when `timeout_s` passes first."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    data = b""
    while len(data) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


class ClockPairs:
    """Every timing round's pairs of one workload: the worker's own reading of each call, the parent's
    reading of that call step and of the noop step before it. A dispute times the workload again, and
    the rule judges all rounds' pairs together."""

    def __init__(self) -> None:
        self.own_us: list[float] = []
        self.used_ns: list[int] = []
        self.noop_ns: list[int] = []

    def add(self, own_us: list[float], used_ns: list[int], noop_ns: list[int]) -> None:
        n = min(len(own_us), len(used_ns), len(noop_ns))
        self.own_us += own_us[:n]
        self.used_ns += used_ns[:n]
        self.noop_ns += noop_ns[:n]

    def verdict(self) -> str | None:
        return tampered(self.own_us, self.used_ns, self.noop_ns)


def tampered(own_us: list[float], used_ns: list[int], noop_ns: list[int]) -> str | None:
    """The REWARD_HACK message when the worker's own readings of the calls are far below the parent's
    readings of the same calls, else None.

    Each call is compared with the noop step just before it (`used_ns[i] - noop_ns[i]`), not with the
    cheapest noop of the round: a noop's cost drifts by 10-40 us on a busy host, and a slack as wide as
    that drift hid a kernel that shrank its own reading to half (CI, round 13). Paired, an honest
    reading differs from the parent's by -8..+3 us (measured under load on 2 cores) and a halved one
    by half the call."""
    if not own_us or not used_ns or len(noop_ns) < len(used_ns):
        return None
    parent = statistics.median((u - n) / 1e3 for u, n in zip(used_ns, noop_ns, strict=False))
    below = statistics.median((u - n) / 1e3 - o for u, n, o in zip(used_ns, noop_ns, own_us, strict=False))
    if below <= max(SLACK_US, parent * (1 - TAMPER_RATIO)):
        return None
    return (
        f"the worker reported {statistics.median(own_us):.3f} us per call, but the harness's own clock times "
        f"the same calls at {parent:.3f} us per call (the worker's CPU time read from outside it, less the "
        "step's own cost): the reported timing was tampered with (patched or edited timing code in the "
        "kernel's process)"
    )


class Stopped(Exception):
    """The worker failed, died or hung during a step: the reply (or None) says why."""

    def __init__(self, reply: dict[str, Any] | None) -> None:
        super().__init__("step failed")
        self.reply = reply


class Steps:
    """The parent's side of the step wire: one step, with the worker's CPU time around it."""

    def __init__(self, ks: Any, timeout_s: float) -> None:
        self.ks, self.timeout_s = ks, timeout_s
        self.rfd, self.wfd = ks.worker.chan.rfd, ks.worker.chan.wfd
        self.cpu: Clock = ks.worker.cpu_ns

    def __call__(self, op: bytes, i: int) -> tuple[int, float]:
        """(ns the worker used for the step, its own reading of the call in us)."""
        c0, t0 = self.cpu(), time.perf_counter_ns()
        try:
            os.write(self.wfd, STEP.pack(op, i))
        except OSError:
            raise Stopped(self.ks.request(None, 5.0)) from None  # records why the worker died
        raw = read_exact(self.rfd, ANSWER.size, self.timeout_s)
        wall = time.perf_counter_ns() - t0
        c1 = self.cpu()
        if raw == b"":  # the worker died: the request reads the end and records why
            raise Stopped(self.ks.request(None, 5.0))
        if raw is None:
            self.ks.worker.kill()
            self.ks.stop("TIMEOUT", f"no answer to a timed call within {self.timeout_s:.0f} s; worker killed")
            raise Stopped(None)
        status, own = ANSWER.unpack(raw)
        if status != OK:  # the worker sends the failure as a message next
            raise Stopped(self.ks.request(None, self.timeout_s))
        spent = cpu_delta_ns(c0, c1) if isinstance(c0, tuple) and isinstance(c1, tuple) else wall
        return spent, own


def timed_round(ks: Any, msg: dict[str, Any], timeout_s: float, pairs: ClockPairs) -> dict[str, Any] | None:
    """The "time" request for a host, with the calls timed by the parent: the reply as the worker's own
    timing would give it (latency, samples, kept outputs, re-validation), or the failing reply/None.
    This round's pairs join `pairs`; when all of them say the worker's readings were shrunk, the reply's
    "clock_dispute" says so (modes.py times the workload again, or fails it when no retry is left).
    Each timed call i: "prepare" (keep call i-1's outputs, the untimed perturbation), "noop" (the
    step's own cost), "call" (the call alone); then "finish" and the worker's closing message."""
    first = ks.request({**msg, "steps": True}, timeout_s)
    if first is None or "error" in first or "reps" not in first:
        return first
    reps = max(2, min(HOST_REPS, int(first["reps"])))
    step = Steps(ks, timeout_s)
    noops: list[int] = []
    used: list[int] = []
    own: list[float] = []
    try:
        ks.worker.chan.send({"cmd": "steps", "wl": msg["wl"]})
        for i in range(reps):
            step(PREPARE, i)
            noops.append(step(NOOP, i)[0])
            spent, mine = step(CALL, i)
            used.append(spent)
            own.append(mine)
        os.write(step.wfd, STEP.pack(FINISH, reps))
    except Stopped as stop:
        return stop.reply
    except OSError:
        return ks.request(None, 5.0)
    end = ks.request(None, timeout_s)
    if end is None or "error" in end:
        return end
    base = min(noops)
    samples = [max(u - base, 0) / 1e3 for u in used]
    latency, spread = summarize(samples)
    violations = [*first.get("violations", []), *end.get("violations", [])]
    pairs.add(own, used, noops)
    return {
        **end,
        "latency_us": latency,
        "spread_pct": spread,
        "samples_us": samples,
        "method": "host_interpreter",
        "kernels_per_call": None,
        "calls": 1,
        "notes": list(first.get("notes", [])),
        "violations": violations,
        "worker_samples_us": own,
        "clock_dispute": pairs.verdict(),
    }
