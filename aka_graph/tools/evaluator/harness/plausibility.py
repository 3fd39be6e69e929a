"""The trusted parent's own check of a latency the worker reports (findings F10, F13, F15).

Whatever runs in the candidate's process can patch the harness's timing code or edit its data (through
frames, ctypes, ...), so the median the worker reports is advisory. The parent therefore asks the worker
for a *burst*: R more replays of the very graph it timed (on a host or in the CUDA-event fallback, R
calls, each after the same untimed input perturbation as when timed), and times the requests with its
own clock (`time.perf_counter_ns` in this process; on a host also the worker's CPU time as the kernel
accounts it, so waiting for a core on a busy machine does not count). Its estimate per call is
(burst - baseline) / (R x calls per replay), the baseline being an empty request's round trip, or a
burst of the perturbations alone. The overheads left in it only make it larger, so an honest kernel
reads at or below it. A reported latency lower than the estimate by more than a tolerance is
REWARD_HACK, with both numbers in the message.

A burst of graph replays goes as several shorter requests (`GRAPH_PIECES`), the fastest counting: a GPU
shared with other processes slows the pieces the others' time slices fall in, not all of them, while
every piece is still the real work back to back.

Each burst (and its perturbations-only twin) moves its untimed perturbation by a salt the parent draws
from os.urandom after the timed calls, so its inputs are values no earlier call saw (issue 13: a cache
keyed on input values, filled by the timed calls or the first burst, answered the fastest burst).

An eager burst (host, CUDA-event fallback) runs, where memory allows, on fresh input sets the worker
draws from the salt before it (`BurstInputs.stage`, untimed), and keeps every call's outputs; once the
burst agrees with the report, the parent checks calls it draws then (`BurstInputs.verify`,
spotcheck.verify_burst_calls). A kernel that does its work outside the timed calls (a signal handler, a
thread, the harness's untimed steps) and tells a burst by its back-to-back calls must skip the work
there to pass the clock, and then its outputs are wrong (round 8's red team: nothing checked them).

Limitations, stated plainly: the parent trusts the worker's count of calls per replay. A graph replayed
in a burst that skips work (or shrinks, with the count) is re-validation's job (fresh inputs written into
the timed buffers, poisoned outputs, one replay, compared by the parent) and the speed-of-light bound's;
so is an eager burst whose sets do not fit (memory.burst_sets_fit: gigabyte inputs, long calls). A burst
replays back to back without the L2 flush a timed replay of the smallest calls gets (timing.needs_flush:
below ~0.7 MiB per call for a 60 MB L2, where the copies alone do not outrun it), so such a burst may
read partly from the L2: faster than the timed replays, never slower (no honest kernel is flagged by
it), which leaves a tiny call's fake report the L2's head start on top of the tolerance.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .proctree import cpu_delta_ns

BURST_TARGET_US = 20_000.0  # long enough that the request's own overhead is a small fraction
MAX_REPS = 1000  # a cheater reporting ~0 us gets a long burst, never an unbounded one
PINGS = 3


@dataclass(frozen=True)
class Tolerance:
    relative: float  # the reported latency may be this fraction below the parent's estimate
    slack_us: float  # plus this much (tiny kernels)
    bursts: int  # at most this many bursts; the fastest counts (a slow burst is never a cheat's doing)
    noise: float = 0.0  # each burst may read this fraction off: the estimate assumes the worst case


GPU_TOLERANCE = Tolerance(0.2, 0.5, 3, 0.05)
# Host timing (the interpreter, non-authoritative) on a busy 2-core machine: an honest eager reference was
# seen 1.54x slower in the parent's burst than in its own samples, so only a report under half of the
# parent's estimate (a fake speed-up of 2x or more) is called tampering there. A loaded host (load 3-5)
# also makes each burst read up to ~10 % off: when the perturbation burst subtracted is large, that noise
# alone could double the estimate of a fast kernel (the demo's "fast" kernel was flagged in 3 of 4 runs),
# so the estimate takes the perturbations' burst at its highest.
HOST_TOLERANCE = Tolerance(0.5, 0.5, 3, 0.05)
# The CUDA-event fallback (uncapturable, often data-dependent calls of 10-40 ms): device time reported,
# host wall time measured; per-call host work and input-dependent routing make the two differ more than
# a replayed graph does, so the host's looser rule applies (issue 9, class 4).
EVENT_TOLERANCE = Tolerance(0.5, 0.5, 3, 0.1)
MIN_PREPARED_REPS = 3  # a prepared burst of a long call still averages a few calls
# ... unless one call is a second or more (a Python loop over thousands of sequences): its noise is a small
# fraction of it, and each call of the burst costs a reference call more when the parent checks the burst's
# outputs (spotcheck.verify_burst_calls), 13 s of a 100 s evaluation at 3.3 s a call on the H200
SELF_BURST_US = 1_000_000.0


def burst_calls(reported_us: float, calls: int, prepared: bool) -> int:
    """The calls of one burst: enough to last BURST_TARGET_US (burst_reps); a prepared (eager) burst at
    least MIN_PREPARED_REPS, bar calls reported at SELF_BURST_US or more. A report is only ever made
    long to look slow, never to shorten a cheat's burst: the shortest burst goes to the longest claim."""
    reps = burst_reps(reported_us, calls)
    if prepared and reported_us < SELF_BURST_US:
        reps = max(reps, MIN_PREPARED_REPS)
    return reps


# A burst of graph replays is sent as this many requests (~2.5 ms each) and the fastest counts. On a GPU
# shared with other processes the driver gives each context time slices of a few ms: one 20 ms burst
# always spans the others' slices while the worker's median of short replays mostly does not (the H200
# with 4 evaluations at once: 9.0 us reported, 15.8 us by a single burst, an honest kernel). A piece
# that falls between the others' slices reads the kernel's own speed; no piece reads faster than that.
GRAPH_PIECES = 8

Request = Callable[[dict[str, Any]], Any]  # the reply, or (reply, wall ns) when it times itself


def burst_reps(reported_us: float, calls: int) -> int:
    """Replays so the burst lasts >= BURST_TARGET_US if the reported latency were true (bounded)."""
    per_rep = max(reported_us, 1e-3) * max(calls, 1)
    return max(1, min(MAX_REPS, math.ceil(BURST_TARGET_US / per_rep)))


def parent_estimate_us(burst_ns: int, round_trip_ns: int, reps: int, calls: int, noise: float = 0.0) -> float:
    """Per call: (burst - baseline) / (reps x calls), with the baseline taken `noise` high (noise in a
    large subtracted baseline never makes a cheat of an honest kernel; a baseline that swallows the
    calls leaves an undecided estimate). The burst itself is the fastest of up to `bursts` tries."""
    low = burst_ns - round_trip_ns * (1.0 + noise)
    return max(low, 0) / 1000.0 / (max(reps, 1) * max(calls, 1))


# the words every disagreement between the parent's clock and the worker's report carries (`implausible`)
DISAGREEMENT = "but the harness's own clock times a burst"
# A disagreement is timed again, by a fresh round, this many times before it is called tampering: another
# process on the same GPU (or host) slows every burst of a round while the worker's own timing of that
# round may have run before it started (seen on the H200 with evaluations in parallel: 3.4 us reported,
# 5.9 us by the parent's burst). An honest kernel timed again under the same load reads slower on both
# clocks and agrees; a fake report disagrees every time. The latency kept is the one that agreed.
DISPUTE_RETRIES = 2


def is_disagreement(found: tuple[str, str] | None) -> bool:
    """Whether `check`'s finding is the clocks disagreeing (retried), not a failed burst (final)."""
    return found is not None and found[0] == "REWARD_HACK" and DISAGREEMENT in found[1]


def implausible(reported_us: float, estimate_us: float, reps: int, calls: int, tol: Tolerance) -> str | None:
    """The verdict message when the worker's number is contradicted by the parent's clock, else None."""
    if reported_us >= estimate_us * (1.0 - tol.relative) - tol.slack_us:
        return None
    return (
        f"the worker reported {reported_us:.3f} us per call, {DISAGREEMENT} "
        f"of {reps} x {calls} calls of the same invocation at {estimate_us:.3f} us per call: "
        "the reported timing was tampered with (patched or edited timing code in the kernel's process)"
    )


@dataclass(frozen=True)
class BurstInputs:
    """Fresh inputs for each eager burst and the check of its outputs (see the module docstring)."""

    stage: Callable[[int, int], bool]  # (salt, reps): the worker drew one set per call
    verify: Callable[[int, int], tuple[str, str] | None]  # (salt, reps): the finding, or None
    # (salt, reps): how much larger the burst's sets are than the timed calls' (>= 1; spotcheck.set_scale)
    scale: Callable[[int, int], float] = lambda salt, reps: 1.0
    # told, for the workload's result, when only that weighing cleared a burst: a verdict that rests on
    # the parent's sizing of the sets is said, not silent
    note: Callable[[str], None] = lambda text: None


Clock = Callable[[], Any]  # CPU time (ns), or (precise, coarse) ns (proctree.tree_cpu_pair), or None


def _timed(request: Request, msg: dict[str, Any], cpu: Clock | None) -> tuple[int, int | None, Any]:
    """(wall, worker CPU, reply) of one request. A request that returns (reply, wall_ns) times itself:
    the parent's checks after each reply (/proc reads of the worker's timers, descriptors, threads:
    milliseconds on a GPU process with many descriptors) are then not part of the burst (an honest MoE
    kernel read 25 % slower in its burst than its own report on the H200 with them in)."""
    c0 = cpu() if cpu else None
    t0 = time.perf_counter_ns()
    reply = request(msg)
    wall = time.perf_counter_ns() - t0
    if isinstance(reply, tuple):
        reply, wall = reply
    c1 = cpu() if cpu else None
    if c0 is None or c1 is None:
        return wall, None, reply
    if isinstance(c0, tuple) and isinstance(c1, tuple):  # (precise, coarse): see proctree.tree_cpu_pair
        return wall, cpu_delta_ns(c0, c1), reply
    return wall, max(int(c1) - int(c0), 0), reply


def _fastest(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def round_trip_ns(request: Request, cpu: Clock | None = None) -> tuple[int, int | None] | None:
    """The fastest of a few empty requests (wall, worker CPU): what a burst costs beyond its calls."""
    best: tuple[int, int | None] | None = None
    for _ in range(PINGS):
        wall, used, reply = _timed(request, {"cmd": "ping"}, cpu)
        if reply is None or "error" in reply:
            return None
        best = (wall, used) if best is None else (min(best[0], wall), _fastest(best[1], used))
    return best


def _fastest_burst(
    request: Request, msg: dict[str, Any], bursts: int, cpu: Clock | None
) -> tuple[int, int | None] | tuple[str, str] | None:
    """(wall, CPU) of the fastest of `bursts` identical requests; (status, message) on an error."""
    best_wall: int | None = None
    best_cpu: int | None = None
    for _ in range(bursts):
        wall, used, reply = _timed(request, msg, cpu)
        if reply is None:
            return None  # the request recorded why the worker was stopped
        if "error" in reply:
            return reply["error"]["status"], "during the timing burst: " + reply["error"]["message"]
        best_wall, best_cpu = _fastest(best_wall, wall), _fastest(best_cpu, used)
    assert best_wall is not None
    return best_wall, best_cpu


def lowest_decided(
    burst: tuple[int, int | None], base: tuple[int, int | None], reps: int, calls: int, noise: float
) -> float:
    """The per-call estimate from the wall clock and (where both were read) the worker's CPU time. Each
    is a lower bound; 0 means its baseline's noise swallowed the calls (a loaded host's wall clock):
    undecided, not "free". The lowest of the decided ones counts (0.0 when neither decided)."""
    estimates = [parent_estimate_us(int(burst[0]), int(base[0]), reps, calls, noise)]
    if burst[1] is not None and base[1] is not None:
        estimates.append(parent_estimate_us(int(burst[1]), int(base[1]), reps, calls, noise))
    decided = [e for e in estimates if e > 0]
    return min(decided) if decided else 0.0


def pieces_of(reps: int, pieces: int) -> list[int]:
    """`reps` split into at most `pieces` near-equal requests (each at least one replay)."""
    n = max(1, min(pieces, reps))
    size, extra = divmod(reps, n)
    return [size + (1 if i < extra else 0) for i in range(n)]


def _graph_estimate(
    request: Request,
    wl: int,
    reps: int,
    calls: int,
    round_trip: tuple[int, int | None],
    tol: Tolerance,
    cpu: Clock | None,
    pieces: int,
) -> tuple[float, int] | tuple[str, str] | None:
    """(per-call estimate, replays it rests on) of one burst of graph replays sent as `pieces` requests:
    the fastest piece counts. Each piece is the real work, back to back, so none reads faster than the
    truth; another process sharing the GPU slows the pieces its time slices fall in, not all of them."""
    salt = int.from_bytes(os.urandom(4), "little")
    best: tuple[float, int] | None = None
    for size in pieces_of(reps, pieces):
        msg = {"cmd": "burst", "wl": wl, "reps": size, "part": "all", "salt": salt}
        main = _fastest_burst(request, msg, 1, cpu)
        if main is None or isinstance(main[0], str):
            return main  # type: ignore[return-value]
        estimate = lowest_decided(main, round_trip, size, calls, tol.noise)
        if estimate > 0 and (best is None or estimate < best[0]):
            best = (estimate, size)
    return best if best is not None else (0.0, reps)


def check(
    request: Request,
    wl: int,
    reported_us: float,
    calls: int,
    round_trip: tuple[int, int | None],
    tol: Tolerance,
    cpu: Clock | None = None,
    prepared: bool = False,
    inputs: BurstInputs | None = None,
    pieces: int = 1,
) -> tuple[str, str] | None:
    """(status, message) when the worker's latency is implausible, the burst failed or (`inputs`) the
    outputs of the burst that agreed are wrong, else None.
    With `cpu` (host timing), the estimate is the lower of wall and the worker's CPU time per call.
    With `prepared` (host / CUDA-event timing: an untimed perturbation before every timed call), a burst
    of the perturbations alone is subtracted instead of the empty request's round trip.
    With `pieces` (graph replays), each burst is sent as that many requests and the fastest counts.
    A burst only ever reads slower than the truth (a clock ramping up, a busy host), so one that looks
    implausible is repeated, up to `tol.bursts` times, and the fastest counts."""
    reps = burst_calls(reported_us, calls, prepared)
    if not prepared and pieces > 1:
        return _check_graph(request, wl, reported_us, calls, round_trip, tol, cpu, reps, pieces)
    best_main: tuple[int, int | None] | None = None
    best_base: Any = round_trip
    message: str | None = None
    for _ in range(max(tol.bursts, 1)):
        # drawn now, after the timed calls: the burst's inputs are values the kernel has never seen, so a
        # cache keyed on them (filled by the timed calls or an earlier burst) cannot answer it (issue 13)
        salt = int.from_bytes(os.urandom(4), "little")
        staged = inputs is not None and prepared and inputs.stage(salt, reps)
        msg = {"cmd": "burst", "wl": wl, "reps": reps, "part": "all", "salt": salt}
        main = _fastest_burst(request, msg, 1, cpu)
        if main is None or isinstance(main[0], str):
            return main  # type: ignore[return-value]
        if best_main is not None:
            main = (min(best_main[0], main[0]), _fastest(best_main[1], main[1]))
        best_main = main
        if prepared:
            msg = {"cmd": "burst", "wl": wl, "reps": reps, "part": "prepare", "salt": salt}
            base = _fastest_burst(request, msg, 1, cpu)
            if base is None or isinstance(base[0], str):
                return base  # type: ignore[no-any-return]
            # the fastest too: the worker could stretch this burst to shrink the estimate, never shorten it
            if best_base is not round_trip:
                base = (min(best_base[0], base[0]), _fastest(best_base[1], base[1]))
            best_base = base
        estimate = lowest_decided(best_main, best_base, reps, calls, tol.noise)
        message = implausible(reported_us, estimate, reps, calls, tol)
        if message is not None and staged and inputs is not None:  # larger sets than the timed calls'?
            scale = inputs.scale(salt, reps)
            if scale > 1.0 and implausible(reported_us * scale, estimate, reps, calls, tol) is None:
                message = None
                inputs.note(
                    f"the timing cross-check's burst ran at {estimate:.3f} us per call on sets {scale:.2f}x "
                    f"the timed calls' sets (in bytes or in the reference's time on them), and was weighed "
                    f"by that against the reported {reported_us:.3f} us (the operator's generator decides "
                    "each set's work by the seed)"
                )
        if message is None:
            return inputs.verify(salt, reps) if staged and inputs is not None else None
    return ("REWARD_HACK", message) if message else None


def _check_graph(
    request: Request,
    wl: int,
    reported_us: float,
    calls: int,
    round_trip: tuple[int, int | None],
    tol: Tolerance,
    cpu: Clock | None,
    reps: int,
    pieces: int,
) -> tuple[str, str] | None:
    """`check` of graph replays sent in pieces: the lowest decided estimate over every piece of every
    burst (0.0, undecided, while none decided)."""
    best: tuple[float, int] = (0.0, reps)
    message: str | None = None
    for _ in range(max(tol.bursts, 1)):
        found = _graph_estimate(request, wl, reps, calls, round_trip, tol, cpu, pieces)
        if found is None or isinstance(found[0], str):
            return found  # type: ignore[return-value]
        estimate, size = found  # type: ignore[misc]
        if estimate > 0 and (best[0] == 0 or estimate < best[0]):
            best = (float(estimate), int(size))
        message = implausible(reported_us, best[0], best[1], calls, tol)
        if message is None:
            return None
    return ("REWARD_HACK", message) if message else None


def check_worker(
    ks: Any,
    on_gpu: bool,
    timeout_s: float,
    wl: int,
    reported_us: float,
    calls: int,
    prepared: bool,
    inputs: BurstInputs | None = None,
) -> tuple[str, str] | None:
    """`check` for a KernelState `ks` (its round trip measured once and kept on it). On a host the
    worker's CPU time counts too (a busy CI machine must not make an honest kernel look faked); on a
    GPU only wall time (the device does the work)."""

    def request(msg: dict[str, Any]) -> tuple[dict[str, Any] | None, int]:
        reply = ks.request(msg, timeout_s)
        return reply, int(getattr(ks, "reply_ns", 0))

    worker = ks.worker
    cpu = None if on_gpu or worker is None else worker.cpu_ns  # the whole tree: helpers count too
    if ks.round_trip is None:
        ks.round_trip = round_trip_ns(request, cpu)
    if ks.round_trip is None or not ks.alive:
        return ks.error or ("RUNTIME_ERROR", "the worker did not answer an empty request")
    tol = (EVENT_TOLERANCE if prepared else GPU_TOLERANCE) if on_gpu else HOST_TOLERANCE
    pieces = GRAPH_PIECES if on_gpu and not prepared else 1
    found = check(request, wl, reported_us, calls, ks.round_trip, tol, cpu, prepared, inputs, pieces)
    if found is None and not ks.alive:
        return ks.error
    return found
