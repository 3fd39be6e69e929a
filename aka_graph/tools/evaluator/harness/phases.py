"""Where an evaluation's start-up goes: a timeline of both processes on one clock (issue 9, Speed).

`phases_s` says how long each phase took; start-up overlaps two processes (the parent loads the operator
and its reference while the worker starts torch, CUDA and Triton), so its parts are reported as points
in time instead: seconds since the command started, for the parent's and the worker's milestones.
perf_counter is CLOCK_MONOTONIC on Linux, one clock for every process of the host (namespaces do not
change it), so the worker's points and the parent's compare directly. The worker's points are sent in its
ready message, before the candidate is imported: nothing the candidate wrote can be in them.

Standard library only (the worker imports it before torch).
"""

from __future__ import annotations

import math
import os
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_start() -> float | None:
    """When this process started, on the perf_counter clock (10 ms resolution), from /proc/self/stat;
    None where that cannot be read. In the jail this is when the jail's namespaces were entered."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        started = int(fields[19]) / CLOCK_TICKS  # since boot (field 22 of stat)
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return time.perf_counter() - age


def relative(points: dict[str, float], t0: float, prefix: str = "") -> dict[str, float]:
    """`points` as seconds since `t0`, rounded; anything that is not a finite number is dropped."""
    return {
        prefix + k: round(v - t0, 3)
        for k, v in points.items()
        if isinstance(k, str) and type(v) in (int, float) and math.isfinite(v)
    }


def startup_timeline(session: object, states: list[object], t0: float) -> dict[str, float]:
    """The parent's milestones (`session.times`) and the first worker's (its own, and the parent's view
    of it: spawned, ready received, candidate loaded), in seconds since the command started."""
    out = relative(getattr(session, "times", {}), t0, "parent.")
    worker = next((getattr(ks, "worker", None) for ks in states if getattr(ks, "worker", None)), None)
    if worker is not None:
        out.update(relative(getattr(worker, "times", {}), t0, "parent.worker_"))
        out.update(relative(getattr(worker, "worker_times", {}), t0, "worker."))
    return dict(sorted(out.items(), key=lambda kv: kv[1]))


def transfer_summary(states: list[object]) -> dict[str, object]:
    """How the workers' outputs came back: bytes through the shared region (shm.py), and whether every
    worker had one (else the pipe carried them); bytes that crossed on the device (device_share.py), and
    why not where a worker's could not (its probe's note)."""
    workers = [getattr(ks, "worker", None) for ks in states]
    chans = [c for c in (getattr(w, "chan", None) for w in workers) if c is not None]
    notes = sorted({n for n in (getattr(w, "share_note", "") for w in workers) if n})
    return {
        "shared_region": bool(chans) and all(getattr(c, "region", None) is not None for c in chans),
        "shared_region_bytes": sum(int(getattr(c, "bulk_bytes", 0)) for c in chans),
        "device_shared": bool(chans) and all(getattr(c, "offer_share", False) for c in chans),
        "device_shared_bytes": sum(int(getattr(c, "shared_bytes", 0)) for c in chans),
        **({"device_share_note": "; ".join(notes)} if notes else {}),
    }
