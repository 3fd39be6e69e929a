"""Where an evaluation's time goes, step by step (issue 9, Speed): named spans of the trusted parent's
work, summed per name over the evaluation and reported in the result as `spans_s`.

`phases_s` says that correctness took 2.6 s; the spans say how much of it was the parent computing the
references, waiting for the worker, reading the worker's outputs from the shared region, or comparing.
They are the parent's own clock around the parent's own steps (nothing the candidate reports), so a
regression in one step shows in the benchmark's table without a profiler.

Standard library only (imported by the protocol before torch matters).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

# A timeline for diagnosis (the benchmarks' memory probe lines it up with the driver's per-process
# memory): with AKA_SPAN_TRACE=<file> in the parent's environment, each span appends "pid start end name".
# The worker's environment never carries it (worker_proc.INHERITED).
TRACE_VAR = "AKA_SPAN_TRACE"

_TOTALS: dict[str, float] = {}
_COUNTS: dict[str, int] = {}


@contextlib.contextmanager
def span(name: str) -> Iterator[None]:
    """Time the block under `name`; nested spans each count their own whole duration."""
    start = time.perf_counter()
    try:
        yield
    finally:
        took = time.perf_counter() - start
        _TOTALS[name] = _TOTALS.get(name, 0.0) + took
        _COUNTS[name] = _COUNTS.get(name, 0) + 1
        trace = os.environ.get(TRACE_VAR)
        if trace:
            end = time.time()
            with contextlib.suppress(OSError), open(trace, "a") as f:
                f.write(f"{os.getpid()} {end - took:.3f} {end:.3f} {name}\n")


def reset() -> None:
    """Start a new evaluation's spans (a long-lived parent evaluates many)."""
    _TOTALS.clear()
    _COUNTS.clear()


def snapshot() -> dict[str, dict[str, float]]:
    """{name: {"s": seconds, "n": times entered}}, by name."""
    return {k: {"s": round(_TOTALS[k], 4), "n": _COUNTS[k]} for k in sorted(_TOTALS)}


# The worker's own steps (worker.py, protocol.py). Its replies carry its spans, but whatever runs in the
# candidate's process can write them: they are shown as advisory, only under these names and as numbers,
# and never in production mode (a name or a number could carry a private shape out).
WORKER_SPANS = frozenset(
    {
        "w.inputs",
        "w.digest",
        "w.checked_call",
        "w.region_write",
        "w.bench_setup",
        "w.revalidate",
        "w.fresh_inputs",
        "w.measure",
        "w.between_steps",
        # Bench's own steps, in whichever process times (the worker; the parent for the reference)
        "bench.estimate",
        "bench.copies",
        "bench.capture",
    }
)


def advisory(reported: object) -> dict[str, dict[str, float]]:
    """The worker's reported spans, kept to the known names and finite non-negative numbers."""
    if not isinstance(reported, dict):
        return {}
    kept: dict[str, dict[str, float]] = {}
    for name, value in reported.items():
        if name not in WORKER_SPANS or not isinstance(value, dict):
            continue
        s, n = value.get("s"), value.get("n")
        if type(s) is float and type(n) is int and 0.0 <= s < 1e6 and 0 <= n < 1e9:
            kept[name] = {"s": round(s, 4), "n": n}
    return kept
