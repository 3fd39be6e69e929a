"""Timing: CUDA-graph replay timed with CUDA events (authoritative), a per-call CUDA-event fallback with
an L2 flush for candidates that cannot be captured, and host timing under the interpreter.

`call(k)` runs the kernel on input/output copy `k` and returns the outputs it produced. No call is timed
from the L2: a replay either rotates over copies that outrun the L2 by themselves, or uses each of its
copies once after an untimed L2 flush (`rotation_copies`, `needs_flush`). Used identically for the
candidate (worker) and the reference (parent).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import hashlib
import math
import statistics
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import torch

Call = Callable[[int], Any]


@dataclass
class Timing:
    latency_us: float
    spread_pct: float
    samples_us: list[float]
    method: str
    kernels_per_call: float | None = None
    notes: list[str] = field(default_factory=list)


def summarize(samples_us: list[float]) -> tuple[float, float]:
    """Median and robust spread (IQR / median, %) of per-call latencies."""
    if not samples_us:
        raise ValueError("no timing samples")
    med = statistics.median(samples_us)
    if len(samples_us) < 4:
        return med, 0.0 if len(samples_us) == 1 else (max(samples_us) - min(samples_us)) / med * 100
    q = statistics.quantiles(samples_us, n=4, method="inclusive")
    return med, (q[2] - q[0]) / med * 100 if med > 0 else 0.0


def summary_mismatch(samples_us: list[float], latency_us: float, spread_pct: float) -> str | None:
    """The parent's own summary of the samples the worker reports, against the worker's: the worker
    summarizes with `statistics`, which the candidate shares (a patched median reported a fifth of the
    real one). None when they agree."""
    if not samples_us or not all(isinstance(s, int | float) and math.isfinite(s) for s in samples_us):
        return "the worker reported no usable timing samples"
    med, spread = summarize([float(s) for s in samples_us])
    if not math.isclose(latency_us, med, rel_tol=1e-9, abs_tol=1e-12) or not math.isclose(
        spread_pct, spread, rel_tol=1e-9, abs_tol=1e-9
    ):
        return (
            f"the worker reported a latency of {latency_us:.6g} us (spread {spread_pct:.3g}%), but its own "
            f"{len(samples_us)} samples give {med:.6g} us ({spread:.3g}%): its summary was tampered with"
        )
    return None


MAX_CALLS = 100  # calls captured per graph at most (tiny kernels): a replay of ~2 ms
L2_PASSES = 3  # copies reused within a replay must first outrun this many L2s (F12)
COLD_BURST_COPIES = 256  # copies enough to outrun 3 x L2 alone for calls from ~0.7 MiB (rotation_copies)
CHEAP_REPLAY_US = 5000.0  # ... where a replay over them stays this short (fast calls only)
WARMUP_CALLS = 8  # eager calls on the capture stream before capture (lazy init, autotuning)
# What a reference timing measured with (refcache.py keys on it): a change of method is a new entry.
# keys cached reference timings (refcache.py): a change of method never reuses an old figure
TIMING_METHOD = (
    "graph replays, one call each from 2 ms; copies outrun 3x the L2 where cheap (<= 256), else a flush "
    "before each; "
    "event fallback starts on an idle device; host reference on one thread, by its own CPU time"
)


# A call this long is a replay of its own: a replay's launch costs microseconds, nothing beside it, while
# five calls a replay made 30 calls a workload (six replays), most of a long-call problem's timing: 055
# audio encoder (calls of ~0.1 s) spent 49 s of 152 s in the worker's replays and as long again in its
# reference's (round 22 on the H200).
SINGLE_CALL_US = 2000.0


def calls_per_replay(est_us: float, max_calls: int = MAX_CALLS) -> int:
    """Calls one replay should hold: ~2 ms of them, at least 5 (one from SINGLE_CALL_US on), at most
    `max_calls`."""
    if est_us >= SINGLE_CALL_US:
        return 1
    return max(5, min(max_calls, round(2000 / max(est_us, 1.0))))


def capture_plan(est_us: float, n_copies: int = 1, max_calls: int = MAX_CALLS) -> tuple[int, int]:
    """(calls per graph, replays): ~2 ms per replay, at most ~30 ms of replays per workload, so a
    14-workload operator times in well under a second yet each sample averages many calls. The calls
    are a multiple of (and at least) `n_copies`: every rotated copy is used equally often, and the copy
    that re-validation replays is one the graph writes."""
    est = max(est_us, 1.0)
    n = max(1, n_copies)
    calls = n * math.ceil(calls_per_replay(est, max_calls) / n)
    replays = max(5, min(20, round(30000 / (calls * est))))
    return calls, replays


def copies_for(bytes_per_call: int, l2_bytes: int, max_copies: int, budget_bytes: int = 4 << 30) -> int:
    """How many input/output copies to rotate so one pass over them exceeds L2_PASSES x the L2."""
    if bytes_per_call <= 0:
        return 1
    want = math.ceil(L2_PASSES * l2_bytes / bytes_per_call)
    return max(1, min(want, max_copies, max(1, budget_bytes // bytes_per_call)))


def rotation_copies(bytes_per_call: int, l2_bytes: int, est_us: float) -> int:
    """Copies for graph timing. The L2 is flushed before every replay (untimed, `needs_flush`), so a
    copy's first use within a replay reads from memory: a copy per call suffices, and small calls get
    at least as many copies as a replay has calls — not the 1,547 a rotation alone needed for a 122 KB
    call and a 60 MB L2 (thousands of copies to capture and fill with fresh inputs cost seconds per
    evaluation). Where it is cheap (fast calls, up to COLD_BURST_COPIES), enough copies that one pass
    outruns L2_PASSES x the L2 by itself: then no flush is needed, and the parent's burst, which
    replays back to back without one (plausibility.py), reads from memory too — a burst read from the
    L2 would give a faked report of such a call the L2's head start (1 MiB calls: 1.3 vs 2.05 us on
    the H200). Larger calls get fewer copies than calls where the pass outruns the L2 on its own."""
    cheap = min(COLD_BURST_COPIES, int(CHEAP_REPLAY_US / max(est_us, 1.0)))
    return copies_for(bytes_per_call, l2_bytes, max(calls_per_replay(est_us), cheap))


def needs_flush(n_copies: int, bytes_per_call: int, l2_bytes: int) -> bool:
    """Whether the copies alone leave data in the L2 between uses: then an L2 flush precedes each
    replay. A rotation that outruns the L2 by itself is left as it was measured (no flush's write-backs
    in the first calls of a replay)."""
    return l2_bytes > 0 and n_copies * bytes_per_call < L2_PASSES * l2_bytes


_FLUSH: dict[tuple[str, int], torch.Tensor] = {}


def flush_buffer(device: torch.device, l2_bytes: int) -> torch.Tensor:
    """A 2 x L2 buffer whose zeroing evicts the L2 (one per device and size, kept for the process)."""
    key = (str(device), l2_bytes)
    if key not in _FLUSH:
        _FLUSH[key] = torch.empty(max(2 * l2_bytes // 4, 1), dtype=torch.int32, device=device)
    return _FLUSH[key]


HOST_FLUSH_MIN = 8 << 20  # bytes a host cache flush touches at least (no cache size readable: this)
HOST_FLUSH_MAX = 512 << 20  # and at most (a CPU of a huge last-level cache is flushed in part)
CPU_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


def last_level_cache_bytes(caches: Path = CPU_CACHES) -> int:
    """The largest cache of the first CPU as sysfs lists it (`index3/size`: "32768K"), 0 where unreadable."""
    largest = 0
    for size in caches.glob("index*/size"):
        try:
            text = size.read_text().strip().upper()
        except OSError:
            continue
        unit = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text[:-1] if text[-1:] in "KMG" else text
        if digits.isdigit():
            largest = max(largest, int(digits) * unit)
    return largest


def host_flush_bytes(llc_bytes: int) -> int:
    """What a host cache flush touches: one and a half times the last-level cache, within bounds."""
    return min(HOST_FLUSH_MAX, max(HOST_FLUSH_MIN, llc_bytes * 3 // 2))


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (glibc's malloc.h)
HOST_MMAP_THRESHOLD = 32 << 20  # glibc's ceiling for its own dynamic threshold on 64-bit hosts
HOST_TRIM_THRESHOLD = 256 << 20  # free heap kept at its top before any goes back to the system


def steady_host_allocator(libc_name: str = "libc.so.6") -> bool:
    """glibc's malloc told to keep what a host-timed call frees for the next one, in both processes that
    time calls on a host (the worker at start-up, the parent's session): blocks up to 32 MiB come from the
    heap, and up to 256 MiB of free heap stays mapped. A fresh process's glibc gave a call's megabyte-sized
    intermediates back to the system and faulted them in again on every call: a 170 x 4096 bf16 rmsnorm
    took ~1450 us a call in a fresh process against ~340 us in one whose heap had settled, and the
    candidate's worker read 1-4 times the reference the long-lived parent timed (round 27, this 2-core
    host). False where there is no glibc (musl: its allocator has no such settings)."""
    try:
        libc = ctypes.CDLL(libc_name)
    except OSError:
        return False
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return False
    mmap_ok = mallopt(M_MMAP_THRESHOLD, HOST_MMAP_THRESHOLD) == 1
    trim_ok = mallopt(M_TRIM_THRESHOLD, HOST_TRIM_THRESHOLD) == 1
    return mmap_ok and trim_ok


def flush_host_caches() -> None:
    """Every byte of a buffer larger than the CPU's last-level cache read and written (an in-place add:
    a fill may take non-temporal stores that bypass the caches), before each host-timed call, the
    candidate's in its worker and the reference's in the parent alike (Bench.prepare_timed_call). The
    worker's calls came after its untimed checks (~5 ms of Python a step: dispatch tables, torch's
    namespaces) and a wake-up on the pipe, the parent's reference calls straight after its own loop:
    the reference itself as a candidate read 1.5-2.9 times the reference on a 28 us rmsnorm call and
    1.0-1.3 times on a 440 us one (round 27, this 2-core host). Both now start from cold caches."""
    key = ("cpu", -1)
    if key not in _FLUSH:
        _FLUSH[key] = torch.zeros(host_flush_bytes(last_level_cache_bytes()), dtype=torch.uint8)
    _FLUSH[key].add_(1)


def replicate(values: list[Any], n: int, align: int = 512) -> list[list[Any]]:
    """`values` plus n-1 copies. Each contiguous tensor's copies are `align`-aligned views into one
    slab filled by one broadcast copy (thousands of clones would cost a launch each); other values are
    cloned (tensors) or shared (Python scalars)."""
    copies: list[list[Any]] = [values] + [[] for _ in range(n - 1)]
    if n <= 1:
        return copies[:1]
    for v in values:
        if not isinstance(v, torch.Tensor):
            for c in copies[1:]:
                c.append(v)
            continue
        nbytes = v.numel() * v.element_size()
        if nbytes == 0 or not v.is_contiguous() or v.dim() == 0 or type(v) is not torch.Tensor:
            for c in copies[1:]:
                c.append(v.clone())
            continue
        stride = -(-nbytes // align) * align
        slab = torch.empty((n - 1, stride), dtype=torch.uint8, device=v.device)
        slab[:, :nbytes].copy_(v.detach().reshape(-1).view(torch.uint8).expand(n - 1, nbytes))
        for i, c in enumerate(copies[1:]):
            c.append(slab[i, :nbytes].view(v.dtype).view(v.shape))
    return copies


def judge_capture(kernel_nodes: int | None, calls: int, no_work: bool = False) -> str | None:
    """A captured graph must launch work on every call: empty or thinner captures are cheats. `no_work`:
    every output (and every input the operator updates in place) has zero elements, so an honest call
    legitimately launches nothing (a workload with an empty batch) and any capture is honest."""
    if kernel_nodes is None or no_work:
        return None
    if kernel_nodes == 0:
        return (
            f"the CUDA graph of {calls} calls captured no kernels (work skipped or done elsewhere: a kernel "
            "launched on a stream other than torch.cuda.current_stream() runs outside what is timed)"
        )
    if kernel_nodes < calls:
        return (
            f"the CUDA graph captured {kernel_nodes} kernels for {calls} calls: repeated calls "
            "skip the work (real work only on the first calls)"
        )
    return None


def timed_seed(pool_seed: int, j: int) -> int:
    """The seed of fresh timed input set j (issue 13, class 1): both processes derive it from the one
    seed the parent drew from os.urandom for this round, so the parent can regenerate the inputs of any
    timed call it chooses to verify after the fact; nothing about it follows from inputs already seen,
    nor from another set's seed: a hash, not an affine map (red team round 24: a random operator's timed
    call read its set's seed off torch's generator, which is seeded with it, added the step, and computed
    the next calls' answers ahead of them). The kernel never sees `pool_seed` itself."""
    raw = hashlib.blake2b(f"{pool_seed}:{j}".encode(), digest_size=8, person=b"aka-timed-set").digest()
    return int.from_bytes(raw, "little") & 0x7FFFFFFF


class TimedSets(NamedTuple):
    """The fresh sets one timing round's calls ran on: `timed_seed(seed, j)` for j < count, each timed call
    on a set of its own (a host's calls, a GPU's CUDA-event calls: their median), or, `rotated`, one set
    in each of a CUDA graph's copies, its replays rotating over them (a mean over the sets: worker.py's
    _fresh_graph_copies). `seed` None: the calls ran on the bench's one set. The reference of an operator
    with its own generator is timed on the same sets (trusted.Reference.time_on_sets)."""

    seed: int | None
    count: int
    rotated: bool = False


HOST_REPS = 5  # at most this many timed calls on a host (each of its own fresh inputs)
EVENT_SAMPLES = 30  # timed calls of the CUDA-event fallback, each of its own fresh inputs (memory allowing)


def host_reps(first_call_s: float, budget_s: float = 0.5, sets: int | None = None) -> int:
    """Timed calls on a host: as many as fit the budget, at least 2, at most HOST_REPS, and never more
    than the round's fresh `sets` (a set used twice is one a cache answers: red team round 25, 2 sets
    for 5 calls, calls 2-4 repeating 0, 1, 0)."""
    reps = max(2, min(HOST_REPS, int(budget_s / max(first_call_s, 1e-6))))
    return min(reps, max(2, sets)) if sets else reps


def time_host(
    call: Call,
    n_copies: int,
    first_call_s: float,
    budget_s: float = 0.5,
    prepare: Callable[[int], None] | None = None,
    after: Callable[[int], None] | None = None,
    clock: Callable[[], int] = time.process_time_ns,
    sets: int | None = None,
) -> Timing:
    """Host timing (interpreter/CPU; never authoritative): the process's CPU time per call, which the
    parent can check against the worker's CPU time as the kernel accounts it (plausibility.py).
    `prepare(i)` runs untimed before call i, `after(i)` untimed after it. `clock`: the trusted parent
    times the reference by its own thread's CPU time (`host_reference_timing`). `sets`: the fresh input
    sets `prepare` writes in, if any (host_reps)."""
    reps = host_reps(first_call_s, budget_s, sets)
    samples = []
    for i in range(reps):
        if prepare is not None:
            prepare(i)
        t0 = clock()  # CPU time: a busy host's waits for a core do not count
        call(i % n_copies)
        samples.append((clock() - t0) / 1e3)
        if after is not None:
            after(i)
    med, spread = summarize(samples)
    return Timing(med, spread, samples, "host_interpreter")


@contextlib.contextmanager
def host_reference_timing() -> Iterator[Callable[[], int]]:
    """The clock and threads for timing the reference on a host, in the trusted parent: one torch thread
    (as the worker runs), timed by the calling thread's CPU time. The parent's process CPU time also
    counts its other threads (intra-op threads spinning at their barriers, the service's own): red team
    round 7 saw a batch-170 rmsnorm reference read 48 ms instead of ~0.25 ms on a busy 2-core host, with
    no candidate running, and the figure was cached."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield time.thread_time_ns
    finally:
        torch.set_num_threads(threads)


def _driver() -> Any:
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def graph_kernel_nodes(graph: Any) -> int | None:
    """Kernel nodes in a kept CUDA graph via the driver API (cuGraphGetNodes/cuGraphNodeGetType)."""
    lib = _driver()
    raw = getattr(graph, "raw_cuda_graph", None)
    if lib is None or raw is None:
        return None
    handle = ctypes.c_void_p(raw())
    count = ctypes.c_size_t(0)
    if lib.cuGraphGetNodes(handle, None, ctypes.byref(count)) != 0:
        return None
    nodes = (ctypes.c_void_p * max(count.value, 1))()
    if lib.cuGraphGetNodes(handle, nodes, ctypes.byref(count)) != 0:
        return None
    kernels = 0
    for i in range(count.value):
        kind = ctypes.c_int(-1)
        if lib.cuGraphNodeGetType(ctypes.c_void_p(nodes[i]), ctypes.byref(kind)) != 0:
            return None
        kernels += kind.value == 0  # CU_GRAPH_NODE_TYPE_KERNEL
    return kernels


def _malloced_bytes() -> int:
    """Bytes the caching allocator has taken from the driver so far in this process (a running total,
    never lowered by the blocks it hands back)."""
    return int(torch.cuda.memory_stats().get("reserved_bytes.all.allocated", 0))


def release_failed_capture(graph: Any, pool: Any) -> None:
    """Hand back the private memory pool of a capture that failed. torch's CUDAGraph releases its pool
    only when the capture ended (CUDAGraph::reset), and a capture the CUDA driver invalidated (a sync, a
    host read, data-dependent routing) never ends: every allocation the captured calls made stays in the
    pool for the life of the process. An uncapturable MoE layer leaked its temporaries on each workload,
    and its worker grew from 73 to 111 GiB until the parent's reference had no room (round 19, H200).
    Where the capture did end (graph.pool() answers), the graph releases its own pool: nothing is done
    here, as a second release would fail inside the graph's destructor."""
    try:
        graph.pool()
        return  # ended: the graph's own reset releases it
    except Exception:
        pass
    device = torch.cuda.current_device()
    for name in ("_cuda_endAllocateToPool", "_cuda_releasePool"):
        step = getattr(torch._C, name, None)
        if step is not None:
            with contextlib.suppress(Exception):
                step(device, pool)
    with contextlib.suppress(Exception):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """Python's cyclic garbage collector off during a capture: a collection then may destroy an earlier
    bench's CUDA graph (a Bench and its GraphTimer form a cycle), which CUDA refuses while a stream
    captures ("operation not permitted when stream is capturing (function reset)", seen on the H200),
    and the capture fails: an honest kernel then timed by the CUDA-event fallback."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class GraphTimer:
    """Captures `calls` invocations rotating over the copies into one CUDA graph and replays it."""

    def __init__(self, call: Call, n_copies: int, calls: int, warmups: int = WARMUP_CALLS) -> None:
        self.call, self.n_copies, self.calls, self.warmups = call, n_copies, calls, warmups
        self.outputs: dict[int, Any] = {}
        self.graph: Any = None
        self.kernel_nodes: int | None = None
        self.notes: list[str] = []
        # device memory the graph's private pool took (the calls' temporaries, kept while the graph lives):
        # not in a bench's copies, yet an attention backward's graphs held 34 GiB of a worker (round 18)
        self.pool_bytes = 0

    def capture(self) -> None:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for k in range(min(self.n_copies, self.warmups)):
                self.call(k)  # warm-up on the capture stream (lazy init, autotuning)
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        malloced = _malloced_bytes()  # the warm-ups' temporaries are cached by now
        try:
            graph = torch.cuda.CUDAGraph(keep_graph=True)
            kept = True
        except TypeError:
            graph, kept = torch.cuda.CUDAGraph(), False
        pool = torch.cuda.graph_pool_handle()  # named here: a failed capture's pool is released by us
        try:
            with warnings.catch_warnings(record=True) as said, _no_collection():
                warnings.simplefilter("always")
                with torch.cuda.graph(graph, pool=pool):
                    for i in range(self.calls):
                        self.outputs[i % self.n_copies] = self.call(i % self.n_copies)
        except BaseException:
            self.outputs.clear()
            release_failed_capture(graph, pool)
            raise
        # what the capture took from the driver (its pool cannot use the general cache's blocks): never
        # less than the change in reserved memory, which any block the allocator hands back meanwhile
        # lowers. Round 22 (055 audio encoder, H200): a new workload ran out of memory beside 57 GiB of
        # graph pools; which count let them stay was not established, so the bench counts the larger one
        self.pool_bytes = max(0, _malloced_bytes() - malloced)
        for w in said:  # torch's own word that the capture launched nothing (then it keeps no graph)
            if "graph is empty" in str(w.message).lower():
                self.kernel_nodes = 0
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if kept and self.kernel_nodes is None:
            try:
                self.kernel_nodes = graph_kernel_nodes(graph)
            except Exception as exc:  # the count is a check, not a requirement of timing
                self.notes.append(f"kernel count unavailable: {exc}")
            with contextlib.suppress(Exception):
                graph.instantiate()
        if self.kernel_nodes is None:
            self.kernel_nodes = self._profiled_kernels(graph)
        self.graph = graph

    def _profiled_kernels(self, graph: Any) -> int | None:
        # the last resort (the driver's count failed on a non-empty graph): torch.profiler's start imports
        # torch._inductor and torch._dynamo (seconds, seen on the H200), so an empty capture is known from
        # torch's own warning instead (capture), and this runs only where neither answers
        try:
            from torch.profiler import ProfilerActivity, profile

            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                graph.replay()
                torch.cuda.synchronize()
            return sum(
                1
                for e in prof.events()
                if e.device_type == torch.autograd.DeviceType.CUDA
                and "memcpy" not in e.name.lower()
                and "memset" not in e.name.lower()
            )
        except Exception as exc:
            self.notes.append(f"kernel count unverified: {exc}")
            return None

    def measure(self, replays: int, flush: torch.Tensor | None = None) -> Timing:
        """`replays` timed replays; with `flush`, that buffer is zeroed before each one, outside the
        events (the host enqueues everything before it waits, so the GPU never idles between them)."""
        self.graph.replay()
        events = [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for _ in range(replays)
        ]
        for start, end in events:
            if flush is not None:
                flush.zero_()
            start.record()
            self.graph.replay()
            end.record()
        torch.cuda.synchronize()
        samples = [s.elapsed_time(e) * 1000.0 / self.calls for s, e in events]
        med, spread = summarize(samples)
        per_call = None if self.kernel_nodes is None else self.kernel_nodes / self.calls
        return Timing(med, spread, samples, "cuda_graph", per_call, list(self.notes))

    def replay_once(self) -> None:
        self.graph.replay()
        torch.cuda.synchronize()


# A call this long (a reference walking its batch in a Python loop: seconds per call on the H200, round
# 11) is sized, warmed up and sampled by its time: the counts for fast calls made 40-odd calls of it.
LONG_CALL_US = 50_000.0
WARMUP_BUDGET_US = 200_000.0  # warm-up calls before a capture: as many as fit, 1 to WARMUP_CALLS
# CUDA-event samples: as many as fit, EVENT_MIN_SAMPLES to EVENT_SAMPLES. At 2 s, the samples were most of
# a long uncapturable workload's timing, and again of its reference's: 024 MoE (a Python loop over 256
# experts, ~0.1 s a call, its samples more than 1 % apart) spent 2.0 of 2.6 s a workload in them, 32 s of
# a 139 s evaluation, and 044 (7168-wide experts) ran past 240 s (round 21 on the H200). One second keeps
# ten samples of a 0.1 s call and every one of a call up to 33 ms.
EVENT_BUDGET_US = 1_000_000.0
EVENT_MIN_SAMPLES = 3
# The event samples end early once this many agree this closely (robust spread, `summarize`): a long call's
# samples vary by microseconds, and its 30 fresh input sets, perturbations and kept outputs made most of an
# uncapturable workload's timing (round 18: 024 MoE, ~3 s a workload for the candidate, ~3 s for the
# reference). The median of 10 samples within a 1 % spread has a standard error of ~0.3 %.
EVENT_STABLE_SAMPLES = 10
EVENT_STABLE_PCT = 1.0


def warmup_calls(est_us: float) -> int:
    """Warm-up calls before a capture (lazy init, autotuning: the first call or two do it)."""
    return max(1, min(WARMUP_CALLS, int(WARMUP_BUDGET_US / max(est_us, 1e-3))))


def event_samples(est_us: float, wanted: int = EVENT_SAMPLES) -> int:
    """Timed calls of the CUDA-event fallback: `wanted` (one per fresh input set) for calls up to ~33 ms,
    fewer for longer ones, at least EVENT_MIN_SAMPLES (a long call's samples vary little)."""
    fit = int(EVENT_BUDGET_US / max(est_us, 1e-3))
    return max(min(EVENT_MIN_SAMPLES, wanted), min(wanted, fit))


def estimate_us(call: Call, n_copies: int, reps: int = 3) -> float:
    """A quick eager estimate (events) to size the graph. A call longer than LONG_CALL_US twice in a row
    is its own estimate (the first alone may be a JIT compile: a 5 us Triton kernel's first call takes
    hundreds of ms, and sizing it so would time it one call per replay)."""
    for k in range(2):
        once = _event_us(lambda k=k: call(k % n_copies))
        if once <= LONG_CALL_US:
            break
        if k == 1:
            return once
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(reps):
        call(i % n_copies)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000.0 / reps


def _event_us(fn: Callable[[], Any]) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000.0


def time_events(
    call: Call,
    n_copies: int,
    l2_bytes: int,
    samples: int = 30,
    prepare: Callable[[int], None] | None = None,
    after: Callable[[int], None] | None = None,
) -> Timing:
    """Per-call CUDA events with an L2 flush before each call: the fallback for uncapturable kernels.
    `after(i)` runs after call i's end event (in stream order, so it is not timed). At most `samples`
    calls; fewer once EVENT_STABLE_SAMPLES of them agree within EVENT_STABLE_PCT (`stable`).

    The device is idle when each start event is recorded (a synchronize after the flush), so a sample is
    never shorter than the host's own time in the call: the flush's GPU time used to overlap the host's
    launches, and work a call left on a stream of its own (never joined to the caller's, so not between
    the events) could hide in it. What such work does after the call returns is the worker's checked
    call's to see (outputs changed after the call returned); on the H200 it was caught wherever it
    outlived the host's next look, and where it did not, its report was 5-12x slower than the honest
    graph-timed kernel (round 7, `benchmarks/probe_side_stream.py`)."""
    flush = flush_buffer(torch.device("cuda", torch.cuda.current_device()), l2_bytes)
    pairs: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []
    for i in range(samples):
        if i >= EVENT_STABLE_SAMPLES and settled(pairs):
            break
        if prepare is not None:
            prepare(i)
        flush.zero_()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call(i % n_copies)
        end.record()
        pairs.append((start, end))
        if after is not None:
            after(i)
    torch.cuda.synchronize()
    data = [s.elapsed_time(e) * 1000.0 for s, e in pairs]
    med, spread = summarize(data)
    return Timing(med, spread, data, "cuda_event")


def settled(pairs: list[tuple[Any, Any]]) -> bool:
    """Whether the event samples so far agree within EVENT_STABLE_PCT (time_events stops then). Their end
    events are complete: the loop synchronized after the last call's `after` and the next flush."""
    torch.cuda.synchronize()
    return stable([s.elapsed_time(e) * 1000.0 for s, e in pairs])


def stable(samples_us: list[float]) -> bool:
    """At least EVENT_STABLE_SAMPLES samples whose robust spread is at most EVENT_STABLE_PCT."""
    return len(samples_us) >= EVENT_STABLE_SAMPLES and summarize(samples_us)[1] <= EVENT_STABLE_PCT
