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
import time
from collections.abc import Iterator

_TOTALS: dict[str, float] = {}
_COUNTS: dict[str, int] = {}


@contextlib.contextmanager
def span(name: str) -> Iterator[None]:
    """Time the block under `name`; nested spans each count their own whole duration."""
    start = time.perf_counter()
    try:
        yield
    finally:
        _TOTALS[name] = _TOTALS.get(name, 0.0) + time.perf_counter() - start
        _COUNTS[name] = _COUNTS.get(name, 0) + 1


def reset() -> None:
    """Start a new evaluation's spans (a long-lived parent evaluates many)."""
    _TOTALS.clear()
    _COUNTS.clear()


def snapshot() -> dict[str, dict[str, float]]:
    """{name: {"s": seconds, "n": times entered}}, by name."""
    return {k: {"s": round(_TOTALS[k], 4), "n": _COUNTS[k]} for k in sorted(_TOTALS)}
