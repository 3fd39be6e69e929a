"""CUDA-graph timing on the GPU, checked against things it does not compute itself (issue 15, finding 2).

- the captured graph's kernel count is exact (1 and 2 kernels per call), and a capture with no kernels or
  with work only on the first calls is judged a cheat by the same Bench the worker uses;
- the harness's latency of a memory-bound ~60 us kernel agrees within +-3 % with an independent
  measurement (eager back-to-back launches between two CUDA events, over buffers that outrun the L2);
- its run-to-run CV over fresh benches is within the documented goal (<= 1 % at >= 10 us).

Run: python3 -m pytest -m gpu tests/gpu/test_timing_gpu.py -v (skipped without CUDA).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable

import pytest
import torch

from aka_graph.tools.evaluator.harness.bench import Bench
from aka_graph.tools.evaluator.harness.runner import KernelRunner
from aka_graph.tools.evaluator.harness.timing import GraphTimer, judge_capture, time_events

pytestmark = pytest.mark.gpu

ELEMENTS = 32 << 20  # 128 MiB of fp32 in, 128 MiB out: ~60 us on an H200, far beyond its L2
L2_BYTES = 60 << 20


def _pairs(n: int, elements: int = 1 << 16) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(torch.randn(elements, device="cuda"), torch.empty(elements, device="cuda")) for _ in range(n)]


@pytest.mark.parametrize(("kernels_per_call", "calls"), [(1, 10), (2, 10), (1, 37)])
def test_the_graph_counts_exactly_the_kernels_it_captured(kernels_per_call: int, calls: int) -> None:
    pairs = _pairs(3)

    def call(k: int) -> torch.Tensor:
        x, y = pairs[k]
        torch.mul(x, 2.0, out=y)
        if kernels_per_call == 2:
            y.add_(1.0)
        return y

    timer = GraphTimer(call, len(pairs), calls)
    timer.capture()
    assert timer.kernel_nodes == kernels_per_call * calls, timer.notes
    assert judge_capture(timer.kernel_nodes, calls) is None
    timing = timer.measure(5)
    assert timing.method == "cuda_graph" and timing.kernels_per_call == kernels_per_call
    x, y = pairs[(calls - 1) % len(pairs)]
    expected = x * 2.0 + (1.0 if kernels_per_call == 2 else 0.0)
    assert torch.equal(y, expected)  # the replays really ran the work


def _bench(fn: Callable[..., object], elements: int = 1 << 16) -> Bench:
    runner = KernelRunner(fn, True, [((elements,), torch.float32)], torch.device("cuda"))
    return Bench(runner, [torch.randn(elements, device="cuda")], torch.device("cuda"), L2_BYTES)


def test_an_empty_capture_is_a_violation() -> None:
    bench = _bench(lambda x, out: None)  # does nothing on the GPU at all
    assert bench.graph is not None and bench.graph.kernel_nodes == 0
    assert any("captured no kernels" in v for v in bench.violations), bench.violations


def test_work_only_on_the_first_calls_is_a_violation() -> None:
    done: set[int] = set()

    def first_call_only(x: torch.Tensor, out: torch.Tensor) -> None:
        if out.data_ptr() not in done:  # "cache": each output buffer computed once, then skipped
            done.add(out.data_ptr())
            torch.mul(x, 2.0, out=out)

    bench = _bench(first_call_only)
    assert bench.graph is not None
    assert any("skip the work" in v or "captured no kernels" in v for v in bench.violations), (
        bench.graph.kernel_nodes,
        bench.calls_per_sample,
        bench.violations,
    )


def test_an_honest_kernel_has_no_capture_violation() -> None:
    bench = _bench(lambda x, out: torch.mul(x, 2.0, out=out))
    assert bench.graph is not None and bench.violations == []
    assert bench.graph.kernel_nodes == bench.calls_per_sample


def _double(x: torch.Tensor, out: torch.Tensor) -> None:
    torch.mul(x, 2.0, out=out)


def independent_us(elements: int, calls: int = 200, buffers: int = 4) -> float:
    """Per-call time of back-to-back eager launches between two events, rotating over `buffers` in/out
    pairs (each far beyond the L2): a ~60 us kernel keeps the stream saturated, so launch overhead
    hides behind execution. No harness code involved."""
    pairs = _pairs(buffers, elements)
    for x, y in pairs:  # warm-up
        _double(x, y)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(calls):
        x, y = pairs[i % buffers]
        _double(x, y)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000.0 / calls


def test_graph_latency_agrees_with_an_independent_event_measurement_within_3_percent() -> None:
    bench = _bench(_double, ELEMENTS)
    assert bench.graph is not None, bench.notes
    harness = bench.measure()
    assert harness.method == "cuda_graph" and harness.kernels_per_call == 1
    eager = statistics.median(independent_us(ELEMENTS) for _ in range(5))
    # the same without the host in the loop: a graph of 200 calls over 4 buffers (a slow host's eager
    # launches left the GPU idle between calls: eager read 3.2 % above the harness in two calls, 2026-12-01)
    reference = rotated_graph_us(ELEMENTS, buffers=4, calls=200, replays=5)
    one = rotated_graph_us(ELEMENTS, buffers=1, calls=31, replays=5)  # the harness's own shape: one copy
    print(
        f"60 us call: harness {harness.latency_us:.3f} us; graphs over 4 buffers {reference:.3f}, over 1 "
        f"{one:.3f}; eager {eager:.3f}"
    )
    assert harness.latency_us >= 10.0, harness.latency_us  # the regime the 3 % goal is about
    assert harness.latency_us == pytest.approx(reference, rel=0.03), (harness.latency_us, reference, eager)


def test_run_to_run_cv_of_a_10_us_plus_kernel_is_within_one_percent() -> None:
    latencies = []
    for _ in range(5):  # a fresh bench each time: new copies, new capture, new graph
        bench = _bench(_double, ELEMENTS)
        latencies.append(bench.measure().latency_us)
        del bench
        torch.cuda.empty_cache()
    cv = statistics.stdev(latencies) / statistics.mean(latencies) * 100
    assert min(latencies) >= 10.0, latencies
    assert cv <= 1.0, (cv, latencies)


def rotated_graph_us(elements: int, buffers: int, calls: int = 2000, replays: int = 10) -> float:
    """Per-call time of a CUDA graph of `calls` back-to-back calls rotating over `buffers` in/out pairs
    (no harness code): with buffers x bytes far beyond the L2, every call reads from memory."""
    pairs = _pairs(buffers, elements)
    for x, y in pairs:
        _double(x, y)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            x, y = pairs[i % buffers]
            _double(x, y)
    graph.replay()
    samples = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0 / calls)
    del graph, pairs
    torch.cuda.empty_cache()
    return statistics.median(samples)


@pytest.mark.parametrize(("kib", "flushed"), [(256, True), (1024, False)])
def test_a_small_call_is_timed_from_memory_like_a_rotation_far_beyond_the_l2(kib: int, flushed: bool) -> None:
    """A 256 KiB call (half in, half out) gets a copy per call of a replay (256) and an L2 flush before
    each replay (timing.needs_flush); a 1 MiB call gets copies that outrun 3x the L2 by themselves (the
    parent's burst, unflushed, is then cold too) — never the thousands of copies a rotation alone needed.
    Either must read like an independent graph rotating over 4x the L2 (within 5 %), not like one whose
    buffers stay in the L2. (2026-12-01, before the 256-copy rule: 1 MiB with a flush read 2.11-2.14 us
    against 2.05 us beyond the L2 and 1.31 us L2-resident.)"""
    elements = kib * 1024 // 8
    bench = _bench(_double, elements)
    assert bench.graph is not None, bench.notes
    assert (bench.flush is not None) is flushed and len(bench.copies) <= 256
    harness = statistics.median(bench.measure().latency_us for _ in range(3))
    per_call = 2 * elements * 4
    cold = rotated_graph_us(elements, buffers=4 * L2_BYTES // per_call + 1)
    warm = rotated_graph_us(elements, buffers=max(1, 8 * 2**20 // per_call))  # 8 MiB: L2-resident
    print(f"{kib} KiB call: harness {harness:.3f} us, beyond the L2 {cold:.3f} us, L2-resident {warm:.3f} us")
    assert harness == pytest.approx(cold, rel=0.05), (harness, cold, warm)


def test_a_garbage_collection_during_capture_does_not_break_it() -> None:
    """Dropped benches (a Bench and its GraphTimer form a cycle) keep their CUDA graphs until Python's
    collector runs; run during a capture, it destroys them, which CUDA refuses while a stream captures,
    and the capture failed (an honest kernel fell back to CUDA events). A collector made to run at every
    allocation must find nothing to do during the capture."""
    for _ in range(3):
        old = _bench(_double)
        assert old.graph is not None
        del old  # left to the cyclic collector
    threshold = gc.get_threshold()
    gc.set_threshold(1)
    try:
        bench = _bench(_double)
    finally:
        gc.set_threshold(*threshold)
    assert bench.graph is not None, bench.notes


def test_the_event_fallback_never_reads_a_call_shorter_than_its_own_time_on_the_host() -> None:
    """Round 7: the fallback's L2 flush ran on the GPU while the host launched the call, so work a call
    left on a stream of its own (not between the caller's events) was read as taking the host's time
    minus the flush's (~35 us on an H200). The start event is now recorded on an idle device: a call that
    spends 300 us on the host and launches its work on a side stream is read at about 300 us or more."""
    host_us = 300.0
    x, y = torch.randn(1 << 20, device="cuda"), torch.empty(1 << 20, device="cuda")
    side = torch.cuda.Stream()

    def call(_: int) -> torch.Tensor:
        t0 = time.perf_counter()
        while (time.perf_counter() - t0) * 1e6 < host_us:
            pass
        with torch.cuda.stream(side):
            torch.mul(x, 2.0, out=y)
        return y

    timing = time_events(call, 1, L2_BYTES, samples=20)
    torch.cuda.synchronize()
    print(f"side-stream call busy {host_us:.0f} us on the host: read {timing.latency_us:.1f} us")
    assert timing.method == "cuda_event"
    # a few us of jitter between the host's enqueue and the GPU's timestamps; the flush hid ~35 us
    assert timing.latency_us >= 0.97 * host_us, timing.samples_us


def _busy_ms(ms: float) -> None:
    """GPU work of about `ms` milliseconds (a spin kernel), measured to calibrate."""
    torch.cuda._sleep(int(ms * 1.98e6))  # ~1.98 GHz: the H200's boost clock, close enough for a bound


def test_a_long_call_is_estimated_from_two_calls_and_a_slow_first_call_alone_is_not_its_estimate() -> None:
    """Round 11: an uncapturable reference of seconds per call was estimated, warmed up and sampled as a
    fast one (43 calls per bench). A call over timing.LONG_CALL_US twice in a row is its own estimate; a
    first call that is long once (a JIT compile) is not."""
    from aka_graph.tools.evaluator.harness.timing import LONG_CALL_US, estimate_us

    calls = []

    def long_call(k: int) -> None:
        calls.append(k)
        _busy_ms(80)

    est = estimate_us(long_call, 1)
    assert len(calls) == 2 and est > LONG_CALL_US

    calls.clear()

    def compiles_first(k: int) -> None:
        calls.append(k)
        _busy_ms(120 if len(calls) == 1 else 0.02)

    est = estimate_us(compiles_first, 1)
    assert len(calls) == 5 and est < 5_000.0  # the first call, a second, then the 3 timed ones


def test_event_sampling_of_a_steady_long_call_stops_at_ten_and_an_unsteady_one_takes_every_sample() -> None:
    """timing.EVENT_STABLE_*: a 2 ms spin varies by microseconds, so its tenth sample ends the sampling;
    a call alternating 1 and 1.5 ms keeps all 30 (its spread is ~40 %)."""
    steady = time_events(lambda _: _busy_ms(2.0), 1, L2_BYTES, samples=30)
    flips = iter(range(1000))
    unsteady = time_events(lambda _: _busy_ms(1.0 if next(flips) % 2 else 1.5), 1, L2_BYTES, samples=30)
    print(f"steady: {len(steady.samples_us)} samples, spread {steady.spread_pct:.3f} %; unsteady: "
          f"{len(unsteady.samples_us)} samples, spread {unsteady.spread_pct:.1f} %")  # fmt: skip
    assert len(steady.samples_us) == 10 and steady.spread_pct <= 1.0
    assert len(unsteady.samples_us) == 30


def test_a_call_of_3_ms_is_one_call_a_replay_and_agrees_with_back_to_back_events_within_3_percent() -> None:
    """timing.SINGLE_CALL_US (round 22): from 2 ms up a graph replay holds one call. A replay's launch
    costs microseconds, so the harness's figure of a ~3 ms spin must agree with 20 eager launches timed
    between two events (the stream never idles behind a 3 ms kernel)."""

    def spin(x: torch.Tensor, out: torch.Tensor) -> None:
        _busy_ms(3.0)
        torch.mul(x, 2.0, out=out)

    bench = _bench(spin)
    assert bench.graph is not None, bench.notes
    assert bench.calls_per_sample == 1, bench.calls_per_sample
    harness = bench.measure()
    x, y = torch.randn(1 << 16, device="cuda"), torch.empty(1 << 16, device="cuda")
    spin(x, y)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        spin(x, y)
    end.record()
    torch.cuda.synchronize()
    eager = start.elapsed_time(end) * 1000.0 / 20
    print(f"3 ms call: harness {harness.latency_us:.1f} us ({harness.method}), eager {eager:.1f} us")
    assert harness.method == "cuda_graph"
    assert harness.latency_us == pytest.approx(eager, rel=0.03), (harness.latency_us, eager)
