"""The timing round's rule for a disagreement between the parent's clock and the worker's report (modes.py).

On the H200 with evaluations in parallel, honest kernels were called REWARD_HACK: the worker timed its
graph before another process loaded the GPU, the parent's bursts ran after (3.4 us reported, 5.9 us by
the bursts). The rule: a disagreement is timed again by a fresh round, up to DISPUTE_RETRIES times; the
latency kept is one the parent's clock agreed with; a report that disagrees every time is tampering; a
burst that failed is final at once.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch

from aka_graph.tools.evaluator.harness import gpu_neighbours, modes
from aka_graph.tools.evaluator.harness.plausibility import (
    DISAGREEMENT,
    DISPUTE_RETRIES,
    GPU_TOLERANCE,
    implausible,
)
from aka_graph.tools.evaluator.harness.runner import digest
from aka_graph.tools.evaluator.harness.session import WorkloadVerdict
from aka_graph.tools.evaluator.harness.timing import summarize


class FakeKernelState:
    """A worker whose timing rounds report the latencies given, one per round."""

    def __init__(self, latencies: list[float]) -> None:
        self.latencies = list(latencies)
        self.rounds = 0
        self.verdicts = {0: WorkloadVerdict(revalidated=True)}
        self.alive, self.error, self.worker = True, None, None
        self.worker_spans: dict[str, Any] = {}
        self.generation_sent: dict[int, float | None] = {}
        self.timed_sets: dict[int, list[tuple[int | None, int]]] = {}

    def request(self, msg: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        assert msg["cmd"] == "time" and msg["wl"] == 0
        latency = self.latencies[min(self.rounds, len(self.latencies) - 1)]
        self.rounds += 1
        samples = [latency] * 5
        med, spread = summarize(samples)
        return {"latency_us": med, "spread_pct": spread, "samples_us": samples, "violations": [],
                "method": "cuda_graph", "calls": 10}  # fmt: skip


SESSION = SimpleNamespace(
    contract={},
    bench_seed=1,
    l2_bytes=0,
    call_timeout=1.0,
    device=torch.device("cuda"),
    sol={},
    reference=SimpleNamespace(generation_s={}),
)


@pytest.fixture
def parent_clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The parent's burst estimates (us), one per check, the last repeating: fill it in the test."""
    estimates: list[float] = []
    checks: list[float] = []

    def check_worker(ks: Any, on_gpu: bool, timeout_s: float, wl: int, reported: float, calls: int,
                     prepared: bool, inputs: Any = None) -> tuple[str, str] | None:  # fmt: skip
        estimate = estimates[min(len(checks), len(estimates) - 1)]
        checks.append(reported)
        message = implausible(reported, estimate, 100, calls, GPU_TOLERANCE)
        return ("REWARD_HACK", message) if message else None

    monkeypatch.setattr(modes, "check_worker", check_worker)
    for name in ("verify_timed_calls", "verify_graph_copies", "outside_work"):
        monkeypatch.setattr(modes, name, lambda *a, **k: None)
    return estimates


def test_an_honest_kernel_timed_before_the_gpu_got_busy_is_timed_again_and_passes(parent_clock) -> None:
    ks = FakeKernelState([3.4, 5.6])  # the second round ran under the same load as the bursts
    parent_clock.extend([5.9, 5.9])
    assert modes._time_round(SESSION, ks, 0) == pytest.approx(5.6)
    verdict = ks.verdicts[0]
    assert verdict.status == "PASS" and verdict.latencies == [pytest.approx(5.6)]
    assert "timed again" in verdict.message and "3.400 us" in verdict.message


def test_a_report_that_disagrees_every_time_is_tampering(
    monkeypatch: pytest.MonkeyPatch, parent_clock
) -> None:
    monkeypatch.setattr(gpu_neighbours, "others_on_gpu", lambda own, uuid: 0)  # the GPU its own
    ks = FakeKernelState([3.4])  # a fake: always 3.4 us, the parent's clock always 5.9 us
    parent_clock.extend([5.9])
    assert modes._time_round(SESSION, ks, 0) is None
    verdict = ks.verdicts[0]
    assert verdict.status == "REWARD_HACK" and DISAGREEMENT in verdict.message
    assert ks.rounds == 1 + DISPUTE_RETRIES and not verdict.latencies


def test_a_report_that_disagrees_every_time_on_a_shared_gpu_is_the_environments(
    monkeypatch: pytest.MonkeyPatch, parent_clock
) -> None:
    """Round 16: 8 evaluations on one H200, 16 honest references called REWARD_HACK by the burst that the
    other processes' kernels slowed. With other processes on the GPU the dispute is INFRA_ERROR."""
    monkeypatch.setattr(gpu_neighbours, "others_on_gpu", lambda own, uuid: 3)  # what nvidia-smi would say
    ks = FakeKernelState([3.4])
    parent_clock.extend([5.9])
    assert modes._time_round(SESSION, ks, 0) is None
    verdict = ks.verdicts[0]
    assert verdict.status == "INFRA_ERROR" and DISAGREEMENT in verdict.message
    assert "3 other process(es) held this GPU" in verdict.message
    assert ks.rounds == 1 + DISPUTE_RETRIES


def test_a_failed_burst_is_final_at_once(monkeypatch: pytest.MonkeyPatch, parent_clock) -> None:
    monkeypatch.setattr(modes, "check_worker", lambda *a, **k: ("REWARD_HACK", "during the timing burst: x"))
    ks = FakeKernelState([3.4])
    assert modes._time_round(SESSION, ks, 0) is None
    assert ks.verdicts[0].status == "REWARD_HACK" and ks.rounds == 1


def test_an_agreeing_report_is_kept_without_a_second_round(parent_clock) -> None:
    ks = FakeKernelState([5.8])
    parent_clock.extend([5.9])
    assert modes._time_round(SESSION, ks, 0) == pytest.approx(5.8)
    assert ks.rounds == 1 and ks.verdicts[0].message == ""


# The re-validation's expected outputs (round 17): computed after the worker's reply, the reference's
# temporaries met the worker's timing bench, which it keeps for the parent's checks of that round (a
# decoder block at 2 x 8192 tokens: 104 GiB in the worker, the parent out of memory on the H200).


class RevalidatedWorker(FakeKernelState):
    """A worker that re-validates honestly: its fresh inputs are the parent's, its outputs the reference's;
    `scalars` the Python scalars it reports using (a graph keeps the ones it was captured with)."""

    def __init__(self, log: list[Any], scalars: list[Any] | None = None) -> None:
        super().__init__([5.8])
        self.verdicts = {0: WorkloadVerdict()}  # not re-validated yet: this round re-validates
        self.log, self.scalars = log, scalars

    def request(self, msg: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if msg["cmd"] == "park":  # its large benches (of the last workload) parked: worker.park
            self.log.append("worker parks")
            return {"parked": 0}
        self.log.append("worker times")
        reply = super().request(msg, timeout_s)
        inputs = drawn(msg["reval"][0], self.scalars)
        reply.update(reval_digest=digest(inputs), reval_outputs=[inputs[0] * 2], reval_scalars=self.scalars)
        return reply


def drawn(seed: int, scalars: list[Any] | None) -> list[Any]:
    """The re-validation's inputs: a tensor from the seed and one scalar (the worker's when it says)."""
    return [torch.full((4,), float(seed % 1000)), scalars[1] if scalars else 7]


@pytest.fixture
def revalidating(monkeypatch: pytest.MonkeyPatch, parent_clock) -> tuple[SimpleNamespace, list[Any]]:
    """A session whose reference logs when it runs, and the log."""
    log: list[Any] = []

    def revalidation_inputs(idx: int, seed: int, scale: float, scalars: Any, bench_seed: int) -> list[Any]:
        return drawn(seed, scalars)

    def outputs(idx: int, inputs: list[Any]) -> tuple[list[Any], None]:
        log.append(("reference runs", inputs[1]))
        return [inputs[0] * 2], None

    def judge_outputs(verdict: Any, got: list[Any], want: list[Any], *a: Any, **k: Any) -> bool:
        return torch.equal(got[0], want[0])

    reference = SimpleNamespace(revalidation_inputs=revalidation_inputs, outputs=outputs, generation_s={})
    session = SimpleNamespace(**{**vars(SESSION), "reference": reference}, judge_outputs=judge_outputs)
    monkeypatch.setattr(modes, "settle", lambda device: log.append("settled"))  # no CUDA on this host
    parent_clock.extend([5.9])
    return session, log


def test_the_reference_runs_on_the_revalidation_inputs_before_the_worker_times(revalidating) -> None:
    session, log = revalidating
    ks = RevalidatedWorker(log)
    assert modes._time_round(session, ks, 0) == pytest.approx(5.8)
    # the worker's large benches parked before the parent's reference needs the memory (round 19: an MoE
    # backward's last bench held 105 GiB of the H200 while the parent drew its inputs)
    assert log == ["worker parks", ("reference runs", 7), "settled", "worker times"]
    assert ks.verdicts[0].status == "PASS" and ks.verdicts[0].revalidated


def test_a_worker_that_kept_its_captured_scalars_gets_the_reference_run_again_on_them(revalidating) -> None:
    session, log = revalidating
    ks = RevalidatedWorker(log, scalars=[None, 9])  # its graph was captured with 9
    assert modes._time_round(session, ks, 0) == pytest.approx(5.8)
    assert log == [
        "worker parks",
        ("reference runs", 7),
        "settled",
        "worker times",
        ("reference runs", 9),
        "settled",
    ]
    assert ks.verdicts[0].status == "PASS"


@pytest.mark.parametrize(
    ("reported", "same"),
    [(None, True), ([], True), ([None, 7], True), ([None], True), ([None, 9], False), ([None, 7.5], False)],
)
def test_revalidation_inputs_count_as_drawn_where_the_scalars_agree(reported: Any, same: bool) -> None:
    expected = modes.RevalidationExpected(digest=[0.0], outputs=[], scalars=[None, 7])
    assert expected.drawn_with(reported) is same
