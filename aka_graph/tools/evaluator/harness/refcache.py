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

In a sandbox job the host's directory is out of reach, so the coordinator carries the operator's entries
in and out (evaluation.py): `AKA_REFCACHE_FILE` names a file in the job that the parent reads before any
worker exists (`preload`, from the command line) and rewrites after every worker is dead (`flush`), so
nothing a candidate writes there is read. There the cache is used while the workers are jailed or the
job itself is isolated (bwrap/unshare: the candidate cannot reach the coordinator's store).

Standard library at import time (the command line preloads before it imports torch).
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
from typing import TYPE_CHECKING, Any

from .isolate import sandbox_isolation

if TYPE_CHECKING:
    from .timing import Timing

METHODS = ("cuda_graph", "cuda_event", "host_interpreter")
CARRY_VAR = "AKA_REFCACHE_FILE"
_CARRIED: dict[str, Any] = {}  # the carried file's entries, read before any worker was spawned
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
    files = {p.relative_to(op_dir).as_posix(): p for p in Path(op_dir).rglob("*") if p.is_file()}
    return files_digest({rel: p for rel, p in files.items() if "__pycache__" not in rel.split("/")})


def files_digest(files: dict[str, Path]) -> str:
    """{relative name: path} as one digest (the coordinator's view of the files it stages is the same)."""
    h = hashlib.sha256()
    for rel in sorted(files):
        size = files[rel].stat().st_size
        h.update(rel.encode() + b"\0" + str(size).encode() + b"\0")
        if size <= MAX_FILE_BYTES:
            h.update(files[rel].read_bytes())
    return h.hexdigest()


def entry_key(op_digest: str, workload: str, device: dict[str, Any], settings: dict[str, Any]) -> str:
    import torch

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


def valid_entry(data: Any) -> bool:
    """Whether `data` is exactly what this module writes (standard library only: the command line checks
    carried entries before it imports torch, so that the workers are spawned at once)."""
    if not isinstance(data, dict):
        return False
    lat, spread, samples = data.get("latency_us"), data.get("spread_pct"), data.get("samples_us")
    kpc, notes, method = data.get("kernels_per_call"), data.get("notes"), data.get("method")
    return (
        _finite(lat)
        and lat > 0
        and _finite(spread)
        and method in METHODS
        and isinstance(samples, list)
        and all(_finite(s) for s in samples)
        and (kpc is None or _finite(kpc))
        and isinstance(notes, list)
        and all(isinstance(n, str) for n in notes)
    )


def _timing(data: Any) -> Timing | None:
    """A cached entry as a timing.Timing, or None when it is not a valid entry."""
    if not valid_entry(data):
        return None
    from .timing import Timing  # torch: only once the workers run

    return Timing(
        float(data["latency_us"]),
        float(data["spread_pct"]),
        [float(s) for s in data["samples_us"]],
        data["method"],
        data["kernels_per_call"],
        list(data["notes"]),
    )


class ReferenceTimingCache:
    """Look-ups and stores for one evaluation; `enabled` False (with `reason`) measures every time."""

    def __init__(
        self,
        directory: Path | None = None,
        enabled: bool = True,
        reason: str = "",
        carried: dict[str, Any] | None = None,
    ) -> None:
        """`carried`: entries carried in by the coordinator (a dict this object reads and adds to)
        instead of a directory."""
        self.directory = directory or cache_dir()
        self.enabled, self.reason, self.carried = enabled, reason, carried
        self.hits: list[str] = []  # workload ids whose reference latency came from the cache
        if self.enabled and self.carried is None:
            try:
                self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as exc:
                self.enabled, self.reason = False, f"cache directory not writable ({exc.strerror})"

    def get(self, key: str, workload_id: str) -> Timing | None:
        if not self.enabled:
            return None
        if self.carried is not None:
            data = {"key": key, "timing": self.carried.get(key)}
        else:
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
        if not valid_entry(entry["timing"]):  # NaN or an unknown method: never stored
            return
        if self.carried is not None:
            self.carried[key] = entry["timing"]
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
        where = "carried by the coordinator" if self.carried is not None else str(self.directory)
        return {"used": True, "directory": where, "cached_workloads": list(self.hits)}


def jailed(states: list[Any]) -> bool:
    """Whether no candidate of the evaluation could write the cache: every worker that ran is jailed."""
    return all(ks.worker is None or ks.worker.isolation == "namespace" for ks in states)


def preload() -> None:
    """Read the carried file (if any) before any worker is spawned, then remove it: what is there at the
    end is only what `flush` wrote."""
    path = os.environ.get(CARRY_VAR)
    if not path:
        return
    _CARRIED.clear()
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        data = {}
    with contextlib.suppress(OSError):
        Path(path).unlink(missing_ok=True)
    entries = data.get("entries") if isinstance(data, dict) else None
    if isinstance(entries, dict):
        _CARRIED.update({k: v for k, v in entries.items() if isinstance(k, str) and valid_entry(v)})
    _CARRIED["__loaded__"] = True


def flush(safe: bool) -> None:
    """Write the carried entries back (after every worker is dead); none when the run was not safe."""
    path = os.environ.get(CARRY_VAR)
    if not path:
        return
    entries = {k: v for k, v in _CARRIED.items() if k != "__loaded__"} if safe else {}
    with contextlib.suppress(OSError):
        Path(path).unlink(missing_ok=True)  # whatever a candidate may have put there
        tmp = Path(path).with_name(f".{Path(path).name}.tmp")
        tmp.write_text(json.dumps({"entries": entries}))
        os.replace(tmp, path)


def _carried() -> dict[str, Any] | None:
    return _CARRIED if os.environ.get(CARRY_VAR) and _CARRIED.get("__loaded__") else None


PerKernel = dict[str, dict[int, Any]]  # kernel label -> workload index -> the reference's timing.Timing


def reference_timings(session: Any, states: list[Any]) -> tuple[dict[int, Any], PerKernel, dict]:
    """The reference's latency per workload index, from the cache where it holds it, else measured (and
    stored); an untimeable reference leaves the entry None, never a failure. Second: per kernel label, the
    reference timed on that kernel's own timed sets, where the operator's own generator draws them
    (`own_set_timings`)."""
    from .timing import TIMING_METHOD  # torch is loaded by now (this module is imported before it)

    carried = _carried()
    safe = jailed(states) or (carried is not None and sandbox_isolation() is not None)
    cache = ReferenceTimingCache(
        enabled=safe,
        reason="a worker ran without the namespace jail and could write the cache",
        carried=carried,
    )
    settings = {"l2_bytes": session.l2_bytes, "timing": TIMING_METHOD}
    op_digest = operator_digest(session.op.directory) if cache.enabled else ""
    # an operator's own generator decides per seed what a set holds (ragged rows, a padded batch's valid
    # rows, a long prefill on rare seeds), and the bench seed is fresh in every evaluation: its reference
    # is timed on this evaluation's sets, never cached (a figure from a long bench set read 5.45x for the
    # reference itself as candidate on a short one: red team round 27, h01)
    per_evaluation = bool(session.contract.get("layout_varies")) or session.reference.seed_may_shape
    own = own_set_timings(session, states) if per_evaluation else {}
    out: dict[int, Any] = {}
    for idx in session.indices:
        if per_evaluation and _all_on_own_sets(idx, states, own):
            continue  # every kernel's timed calls ran on sets of their own: `own` holds the reference's
        wid = session.workload_id(idx)
        key = entry_key(op_digest, f"{idx}:{wid}", session.device_info, settings) if cache.enabled else ""
        timing = None if per_evaluation else cache.get(key, wid)
        if timing is None:
            try:
                timing = session.reference.time(idx, session.bench_seed, session.l2_bytes)
            except Exception:
                out[idx] = None
                continue
            if not per_evaluation:
                cache.put(key, timing)
        out[idx] = timing
    return out, own, cache.summary()


def _all_on_own_sets(idx: int, states: list[Any], own: PerKernel) -> bool:
    """Whether every kernel timed on workload `idx` has the reference's figure on its own sets: else (its
    calls ran on the bench's one set, a GPU's fixed buffers or a host round without fresh sets, or its
    own-set timing failed) the reference is timed on the bench's set too."""
    timed = [ks for ks in states if ks.timed_sets.get(idx)]
    return bool(timed) and all(idx in own.get(ks.label, {}) for ks in timed)


def own_set_timings(session: Any, states: list[Any]) -> PerKernel:
    """For an operator whose own generator decides what each set holds: the reference timed on exactly
    the sets each kernel's kept rounds were timed on (a call per set, or a CUDA graph's copies: see
    trusted.Reference.time_on_sets), so that the speed-up compares like with like.
    Timed on the bench's one set (and cached without its seed), the reference read 2,607 us beside a
    candidate timed at 240-2,114 us on sets of other sizes (red team round 25), and 5.70x off on sets of
    one shape whose valid rows follow the seed (round 27, h01). Never cached: the sets are this
    evaluation's own."""
    own: PerKernel = {}
    for ks in states:
        for idx, rounds in ks.timed_sets.items():
            if rounds and all(r.seed is not None for r in rounds):
                try:
                    timing = session.reference.time_on_sets(idx, rounds, session.l2_bytes, session.bench_seed)
                    own.setdefault(ks.label, {})[idx] = timing
                except Exception:
                    continue  # the shared figure (or none) stands for it, never a failure
    return own
