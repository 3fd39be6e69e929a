"""The reference's latency, cached across evaluations (issue 9, Speed).

The reference's timing does not depend on the candidate: measuring it again for every candidate of a
campaign costs a second or more per evaluation and tells nothing new. It is cached per (operator digest,
reference source included; workload; device; torch/CUDA version; harness version, which covers every
timing setting in its source; the L2 size and copy cap) in a directory only the trusted parent writes:
`AKA_CACHE_DIR` (set by whoever runs the harness; the worker's environment never carries AKA_*
variables) or ~/.cache/aka_graph. Nothing the candidate produced is ever cached, and the cache is used only
while every worker of the evaluation is jailed (isolate.py: read-only file systems but its scratch
directory); an unjailed candidate could write the directory, so the reference is measured then. The
result says which latencies came from the cache (`reference_timing_cache`). The reference latency is a
display and speed-up denominator, never a verdict.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import torch

from .timing import Timing

METHODS = ("cuda_graph", "cuda_event", "host_interpreter")
MAX_FILE_BYTES = 64 << 20  # larger operator files are hashed by name and size only


def cache_dir() -> Path:
    root = os.environ.get("AKA_CACHE_DIR") or str(Path.home() / ".cache" / "aka_graph")
    return Path(root) / "reference_timing"


@functools.cache
def harness_version() -> str:
    """Every source file of the harness: any change to how the reference is timed invalidates the cache."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for path in sorted(here.rglob("*.py")):
        if "__pycache__" not in path.parts:
            h.update(path.relative_to(here).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def operator_digest(op_dir: Path) -> str:
    """The operator's files (definition, workloads, reference and input sources) as one digest."""
    h = hashlib.sha256()
    for path in sorted(p for p in Path(op_dir).rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        size = path.stat().st_size
        h.update(path.relative_to(op_dir).as_posix().encode() + b"\0" + str(size).encode() + b"\0")
        if size <= MAX_FILE_BYTES:
            h.update(path.read_bytes())
    return h.hexdigest()


def entry_key(op_digest: str, workload: str, device: dict[str, Any], settings: dict[str, Any]) -> str:
    fields = {
        "operator": op_digest,
        "workload": workload,
        "device": device,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hip": torch.version.hip,
        "harness": harness_version(),
        "settings": settings,
    }
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()


def _finite(x: Any) -> bool:
    return type(x) in (int, float) and math.isfinite(x)


def _timing(data: Any) -> Timing | None:
    """A cached entry as a Timing, or None when it is not exactly what this module writes."""
    if not isinstance(data, dict):
        return None
    lat, spread, samples = data.get("latency_us"), data.get("spread_pct"), data.get("samples_us")
    kpc, notes, method = data.get("kernels_per_call"), data.get("notes"), data.get("method")
    if not (_finite(lat) and lat > 0 and _finite(spread) and method in METHODS):
        return None
    if not isinstance(samples, list) or not all(_finite(s) for s in samples):
        return None
    if kpc is not None and not _finite(kpc):
        return None
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        return None
    return Timing(float(lat), float(spread), [float(s) for s in samples], method, kpc, list(notes))


class ReferenceTimingCache:
    """Look-ups and stores for one evaluation; `enabled` False (with `reason`) measures every time."""

    def __init__(self, directory: Path | None = None, enabled: bool = True, reason: str = "") -> None:
        self.directory = directory or cache_dir()
        self.enabled, self.reason = enabled, reason
        self.hits: list[str] = []  # workload ids whose reference latency came from the cache
        if self.enabled:
            try:
                self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as exc:
                self.enabled, self.reason = False, f"cache directory not writable ({exc.strerror})"

    def get(self, key: str, workload_id: str) -> Timing | None:
        if not self.enabled:
            return None
        try:
            data = json.loads((self.directory / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None
        timing = _timing(data.get("timing")) if isinstance(data, dict) and data.get("key") == key else None
        if timing is not None:
            self.hits.append(workload_id)
        return timing

    def put(self, key: str, timing: Timing) -> None:
        if not self.enabled:
            return
        entry = {
            "key": key,
            "timing": {
                "latency_us": timing.latency_us,
                "spread_pct": timing.spread_pct,
                "samples_us": list(timing.samples_us),
                "method": timing.method,
                "kernels_per_call": timing.kernels_per_call,
                "notes": list(timing.notes),
            },
        }
        if _timing(entry["timing"]) is None:  # NaN or an unknown method: never stored
            return
        with contextlib.suppress(OSError):
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp_", suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump(entry, f)
            os.replace(tmp, self.directory / f"{key}.json")

    def summary(self) -> dict[str, Any]:
        """What the result JSON says about the cache."""
        if not self.enabled:
            return {"used": False, "reason": self.reason, "cached_workloads": []}
        return {"used": True, "directory": str(self.directory), "cached_workloads": list(self.hits)}


def jailed(states: list[Any]) -> bool:
    """Whether no candidate of the evaluation could write the cache: every worker that ran is jailed."""
    return all(ks.worker is None or ks.worker.isolation == "namespace" for ks in states)


def reference_timings(session: Any, states: list[Any], max_copies: int) -> tuple[dict[int, Any], dict]:
    """The reference's latency per workload index, from the cache where it holds it, else measured (and
    stored); an untimeable reference leaves the entry None, never a failure."""
    cache = ReferenceTimingCache(
        enabled=jailed(states), reason="a worker ran without the namespace jail and could write the cache"
    )
    settings = {"l2_bytes": session.l2_bytes, "max_copies": max_copies}
    op_digest = operator_digest(session.op.directory) if cache.enabled else ""
    out: dict[int, Any] = {}
    for idx in session.indices:
        wid = session.workload_id(idx)
        key = entry_key(op_digest, f"{idx}:{wid}", session.device_info, settings) if cache.enabled else ""
        timing = cache.get(key, wid)
        if timing is None:
            try:
                timing = session.reference.time(idx, session.bench_seed, session.l2_bytes)
            except Exception:
                out[idx] = None
                continue
            cache.put(key, timing)
        out[idx] = timing
    return out, cache.summary()
