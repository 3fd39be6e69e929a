"""The parent's own check of the worker's latency: a burst of the timed invocation, timed by the parent's
clock, must not contradict the reported median (F10/F13/F15). The worker here is a small honest test
double through the same request interface (real sleeps), and the real Bench on CPU for the burst."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
import torch

from aka_graph.tools.evaluator.harness.bench import Bench
from aka_graph.tools.evaluator.harness.plausibility import (
    EVENT_TOLERANCE,
    GPU_TOLERANCE,
    GRAPH_PIECES,
    HOST_TOLERANCE,
    MAX_REPS,
    burst_reps,
    check,
    implausible,
    parent_estimate_us,
    pieces_of,
    round_trip_ns,
)
from aka_graph.tools.evaluator.harness.proctree import process_cpu_ns
from aka_graph.tools.evaluator.harness.runner import KernelRunner


class SleepingWorker:
    """Answers like the worker: `ping` at once, `burst` after reps x calls x `true_us` of work."""

    def __init__(self, true_us: float, calls: int = 1, prepare_us: float = 0.0) -> None:
        self.true_us, self.calls, self.prepare_us = true_us, calls, prepare_us
        self.bursts: list[int] = []

    def __call__(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        if msg["cmd"] == "burst":
            self.bursts.append(msg["reps"])
            work = self.true_us * self.calls if msg["part"] == "all" else 0.0
            time.sleep(msg["reps"] * (self.prepare_us + work) / 1e6)
        return {}


def test_a_burst_lasts_about_20_ms_if_the_report_were_true_and_is_bounded() -> None:
    assert burst_reps(10.0, 100) == 20  # 1 ms per replay
    assert burst_reps(60.0, 1) == 334
    assert burst_reps(1e-9, 4096) == MAX_REPS  # 1e-3 us floor x 4096 calls: 4883 reps, capped
    assert burst_reps(0.0, 1) == MAX_REPS  # a report of ~0 gets the longest burst
    assert burst_reps(50_000.0, 5) == 1


def test_the_parent_estimate_subtracts_the_round_trip_and_divides_by_every_call() -> None:
    assert parent_estimate_us(21_000_000, 1_000_000, 10, 200) == pytest.approx(10.0)
    assert parent_estimate_us(500, 1000, 1, 1) == 0.0  # never negative


def test_honest_reports_within_tolerance_pass_and_fake_speedups_do_not() -> None:
    assert implausible(10.0, 10.0, 20, 100, GPU_TOLERANCE) is None
    assert implausible(9.0, 10.0, 20, 100, GPU_TOLERANCE) is None  # 10 % below: clock noise
    assert implausible(25.0, 10.0, 20, 100, GPU_TOLERANCE) is None  # slower than the burst: fine
    assert implausible(1.7, 2.5, 20, 4096, GPU_TOLERANCE) is None  # tiny kernels get a little slack
    message = implausible(4.0, 10.0, 20, 100, GPU_TOLERANCE)  # a 2.5x fake speed-up
    assert message and "4.000 us" in message and "10.000 us" in message and "20 x 100" in message
    assert implausible(1.0, 2.6, 20, 4096, GPU_TOLERANCE)  # 2.6x on a tiny kernel
    assert implausible(7000.0, 10000.0, 3, 1, HOST_TOLERANCE) is None  # host timing: wider tolerance
    assert implausible(6500.0, 10000.0, 3, 1, HOST_TOLERANCE) is None  # 1.54x: seen honestly on CI
    assert implausible(4000.0, 10000.0, 3, 1, HOST_TOLERANCE)  # a 2.5x fake is still caught


def test_an_honest_worker_passes_the_burst_check() -> None:
    worker = SleepingWorker(true_us=2000.0)
    rt = round_trip_ns(worker)
    assert rt is not None and rt[0] >= 0 and rt[1] is None
    assert check(worker, 0, 2000.0, 1, rt, HOST_TOLERANCE) is None
    assert worker.bursts == [10]  # one burst of >= 20 ms agrees: no need for another
    slow = SleepingWorker(true_us=150_000.0)
    assert check(slow, 0, 150_000.0, 1, rt, HOST_TOLERANCE) is None
    assert slow.bursts == [1]  # a call longer than 100 ms: a burst of one call


class RampingWorker(SleepingWorker):
    """Honest, but its first burst runs slow (a GPU clock ramping up after an idle phase)."""

    def __call__(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        if msg["cmd"] == "burst" and not self.bursts:
            time.sleep(msg["reps"] * self.true_us * 0.6 / 1e6)
        return super().__call__(msg)


def test_a_burst_that_ran_slow_is_repeated_and_the_fastest_counts() -> None:
    worker = RampingWorker(true_us=1000.0)
    rt = round_trip_ns(worker)
    assert rt is not None
    assert check(worker, 0, 1000.0, 1, rt, GPU_TOLERANCE) is None
    assert len(worker.bursts) == 2  # the first read 1.6x slow; the second agreed with the report


def test_a_fake_report_stays_implausible_over_every_repeated_burst() -> None:
    worker = SleepingWorker(true_us=1000.0)
    rt = round_trip_ns(worker)
    assert rt is not None
    found = check(worker, 0, 400.0, 1, rt, GPU_TOLERANCE)  # a 2.5x fake speed-up
    assert found is not None and found[0] == "REWARD_HACK"
    assert len(worker.bursts) == GPU_TOLERANCE.bursts


def test_the_untimed_perturbation_before_host_calls_is_subtracted_not_counted() -> None:
    worker = SleepingWorker(true_us=1000.0, prepare_us=3000.0)  # perturbing inputs costs 3x the call
    rt = round_trip_ns(worker) or (0, None)
    assert check(worker, 0, 1000.0, 1, rt, HOST_TOLERANCE, prepared=True) is None
    cheap = SleepingWorker(true_us=1000.0, prepare_us=300.0)  # fresh inputs copied in: cheap
    assert check(cheap, 0, 200.0, 1, rt, HOST_TOLERANCE, prepared=True) is not None  # 5x faked


def test_a_perturbation_burst_that_dwarfs_the_calls_decides_nothing() -> None:
    """Issue 9 class 4: burst noise on a large subtracted baseline must never make a cheat of an honest
    fast kernel: 10 % noise on a baseline 3x the call is 30 % of the call's time."""
    assert parent_estimate_us(4_000_000, 3_000_000, 1000, 1, noise=0.1) == pytest.approx(0.7)
    assert parent_estimate_us(4_000_000, 3_000_000, 1000, 1) == pytest.approx(1.0)
    assert parent_estimate_us(4_000_000, 3_800_000, 1000, 1, noise=0.1) == 0.0  # undecided
    assert implausible(0.6, 0.7, 1000, 1, HOST_TOLERANCE) is None  # an honest 1 us call, reported 0.6


def test_long_uncapturable_calls_get_the_event_tolerance_and_several_calls_per_burst() -> None:
    from aka_graph.tools.evaluator.harness.plausibility import MIN_PREPARED_REPS

    worker = SleepingWorker(true_us=26_000.0, prepare_us=500.0)  # 26 ms, data-dependent, uncapturable
    rt = round_trip_ns(worker) or (0, None)
    assert check(worker, 0, 0.75 * 26_000.0, 1, rt, EVENT_TOLERANCE, prepared=True) is None
    assert worker.bursts and min(worker.bursts) >= MIN_PREPARED_REPS
    assert check(worker, 0, 26_000.0 / 3, 1, rt, EVENT_TOLERANCE, prepared=True) is not None


def test_a_call_of_a_second_or_more_is_its_own_burst_and_a_shorter_one_gets_a_few(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each call of an eager burst costs a reference call when its outputs are checked: a multi-second
    call (a reference looping over thousands of sequences in Python) is burst once; a 26 ms one three
    times (data-dependent routing varies per call); graph replays as many as last the burst's target."""
    from aka_graph.tools.evaluator.harness import plausibility

    burst_calls, least = plausibility.burst_calls, plausibility.MIN_PREPARED_REPS
    assert burst_calls(3_300_000.0, 1, prepared=True) == 1
    assert burst_calls(plausibility.SELF_BURST_US, 1, prepared=True) == 1
    assert burst_calls(plausibility.SELF_BURST_US - 1, 1, prepared=True) == least
    assert burst_calls(26_000.0, 1, prepared=True) == least
    assert burst_calls(26_000.0, 1, prepared=False) == 1
    assert burst_calls(5.0, 1, prepared=False) == burst_calls(5.0, 1, prepared=True) == MAX_REPS
    monkeypatch.setattr(plausibility, "SELF_BURST_US", 30_000.0)  # the rule at a scale a test can sleep
    slow = SleepingWorker(true_us=40_000.0)  # honest
    rt = round_trip_ns(slow) or (0, None)
    assert check(slow, 0, 40_000.0, 1, rt, EVENT_TOLERANCE, prepared=True) is None
    assert slow.bursts == [1, 1]  # the calls, then the perturbations alone
    faked = SleepingWorker(true_us=100_000.0)  # 100 ms of work reported as 2.5x faster: still caught
    found = check(faked, 0, 40_000.0, 1, rt, EVENT_TOLERANCE, prepared=True)
    assert found is not None and found[0] == "REWARD_HACK"
    assert set(faked.bursts) == {1}


def test_a_worker_reporting_a_faked_latency_is_a_reward_hack() -> None:
    worker = SleepingWorker(true_us=200.0, calls=10)  # 2 ms per replay, reported as 0.8 ms
    status, message = check(worker, 3, 80.0, 10, round_trip_ns(worker) or (0, None), GPU_TOLERANCE) or (
        "",
        "",
    )
    assert status == "REWARD_HACK" and "80.000 us" in message and "harness's own clock" in message


def test_on_a_busy_host_time_spent_waiting_for_a_core_is_not_counted() -> None:
    """The worker's CPU time (kernel-accounted) bounds the host estimate: a burst stretched by waiting
    (here: sleeping) is not mistaken for a faked report; the same burst on wall time alone would be."""
    worker = SleepingWorker(true_us=2000.0)  # "computes" 2 ms per call, but without using a CPU
    cpu = lambda: process_cpu_ns(os.getpid())  # noqa: E731 - the test double runs in this process
    rt = round_trip_ns(worker, cpu)
    assert rt is not None and rt[1] is not None
    assert check(worker, 0, 500.0, 1, rt, HOST_TOLERANCE, cpu) is None
    assert check(worker, 0, 500.0, 1, (rt[0], None), HOST_TOLERANCE) is not None


def test_process_cpu_time_grows_with_work_not_with_waiting() -> None:
    pid = os.getpid()
    before = process_cpu_ns(pid)
    time.sleep(0.05)
    slept = process_cpu_ns(pid)
    assert before is not None and slept is not None and slept - before < 20_000_000
    deadline = time.perf_counter() + 20
    while (process_cpu_ns(pid) or 0) - slept < 30_000_000 and time.perf_counter() < deadline:
        pass  # busy: CPU time accrues (however long a busy host makes us wait for it)
    assert (process_cpu_ns(pid) or 0) - slept >= 30_000_000
    assert process_cpu_ns(-1) == 0


def test_worker_errors_during_the_burst_are_reported_as_such() -> None:
    def failing(msg: dict[str, Any]) -> dict[str, Any]:
        if msg["cmd"] == "burst":
            return {"error": {"status": "RUNTIME_ERROR", "message": "boom"}}
        return {}

    assert check(failing, 0, 5.0, 1, (0, None), GPU_TOLERANCE) == (
        "RUNTIME_ERROR",
        "during the timing burst: boom",
    )
    assert (
        check(lambda msg: None, 0, 5.0, 1, (0, None), GPU_TOLERANCE) is None
    )  # the request recorded the stop
    assert round_trip_ns(lambda msg: None) is None


def test_the_bench_burst_runs_the_timed_invocation_reps_times_on_a_host() -> None:
    seen: list[int] = []

    def kernel(x: torch.Tensor, out: torch.Tensor) -> None:
        seen.append(x.data_ptr())
        out.copy_(x * 2)

    bench = Bench(
        KernelRunner(kernel, True, [((4,), torch.float32)], torch.device("cpu")),
        [torch.ones(4)],
        torch.device("cpu"),
        0,
    )
    assert bench.calls_per_sample == 1 and len(seen) == 1
    bench.burst(7)
    assert len(seen) == 8  # each call after the same untimed input perturbation as when timed
    assert not torch.equal(bench.copies[0][0], torch.ones(4))
    assert torch.equal(bench.outs[0][0], bench.copies[0][0] * 2)
    bench.burst(5, part="prepare")
    assert len(seen) == 8  # perturbations only


class SharedGpu:
    """A GPU shared with another process, on a virtual clock: the other context holds it for `busy_ms` of
    every `period_ms` (the driver's time slices); the worker's replays progress only in the rest. Each
    request costs `overhead_us` of messaging. The request times itself (returns (reply, wall ns)), as the
    real one does, so the test is exact and independent of this host's load."""

    def __init__(self, replay_us: float, busy_ms: float = 5.0, period_ms: float = 10.0) -> None:
        self.replay_us, self.busy_us, self.period_us = replay_us, busy_ms * 1000, period_ms * 1000
        self.now_us, self.overhead_us = 1234.5, 40.0
        self.pieces: list[int] = []

    def _run(self, work_us: float) -> None:
        while work_us > 1e-9:
            phase = self.now_us % self.period_us
            if phase < self.busy_us:  # the other process's slice: wait it out
                self.now_us += self.busy_us - phase
                continue
            step = min(work_us, self.period_us - phase)
            self.now_us, work_us = self.now_us + step, work_us - step

    def __call__(self, msg: dict[str, Any]) -> tuple[dict[str, Any], int]:
        start = self.now_us
        self.now_us += self.overhead_us
        if msg["cmd"] == "burst":
            self.pieces.append(msg["reps"])
            self._run(msg["reps"] * self.replay_us)
        return {}, int((self.now_us - start) * 1000)


def test_the_burst_is_cut_in_pieces_that_cover_it() -> None:
    assert pieces_of(70, 8) == [9, 9, 9, 9, 9, 9, 8, 8]
    assert pieces_of(3, 8) == [1, 1, 1] and pieces_of(1, 8) == [1] and pieces_of(70, 1) == [70]


def test_an_honest_kernel_on_a_shared_gpu_agrees_with_the_fastest_piece_not_with_one_long_burst() -> None:
    """The H200 with 4 evaluations at once: 9.0 us reported, 15.8 us by one 20 ms burst (round 9)."""
    calls, true_us = 32, 9.0
    one = SharedGpu(true_us * calls)
    rt = round_trip_ns(one)
    assert rt == (40_000, None)
    found = check(one, 0, true_us, calls, rt, GPU_TOLERANCE)  # one burst spans the other's slices
    assert found is not None and "own clock" in found[1]
    shared = SharedGpu(true_us * calls)
    assert check(shared, 0, true_us, calls, rt, GPU_TOLERANCE, pieces=GRAPH_PIECES) is None
    assert sum(shared.pieces[:GRAPH_PIECES]) == burst_reps(true_us, calls)  # the pieces are one burst


@pytest.mark.parametrize("busy_ms", [0.0, 5.0, 9.0])
def test_no_piece_reads_faster_than_the_work_so_a_faked_report_stays_caught(busy_ms: float) -> None:
    calls, true_us = 32, 9.0
    gpu = SharedGpu(true_us * calls, busy_ms=busy_ms)
    found = check(gpu, 0, true_us / 1.5, calls, (40_000, None), GPU_TOLERANCE, pieces=GRAPH_PIECES)
    assert found is not None and found[0] == "REWARD_HACK" and "own clock" in found[1]
    assert len(gpu.pieces) == GPU_TOLERANCE.bursts * GRAPH_PIECES  # every piece of every burst was tried
