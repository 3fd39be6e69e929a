"""Correctness on a large workload: one seed at a time, the parent's reference before the worker's call
(memory.one_seed_at_a_time). Round 18 on the H200: with every seed at once, each process held three
24 GiB sets of MoE weight gradients, and a decoder block's reference computed its 16 GiB of attention
scores while the worker held 104 GiB: out of memory on problems one call of which fits.

These run the real correctness phase (a Session, a worker process, the rmsnorm fixture) with the size at
which a workload counts as large moved below the fixture's, and record what the parent did in order."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from aka_graph.tools.evaluator.harness import memory, modes
from aka_graph.tools.evaluator.harness.session import Session, Settings
from tests.conftest import SOL_FIXTURES
from tests.tools.evaluator.harness.correctness_steps import record_steps

CANDIDATES = Path(__file__).resolve().parent / "candidates"
RMSNORM = SOL_FIXTURES / "rmsnorm"
SMALL_WORKLOAD = "864d596c-a930-4fc4-b241-02e6a06e92cb"  # batch_size 1: a few KiB


def correctness(kernel: str, monkeypatch: pytest.MonkeyPatch, large: bool) -> tuple[Session, Any, list]:
    """The correctness phase of `kernel` on one rmsnorm workload; (session, its verdict, the parent's steps:
    ("reference", seed numbers) and ("run", how many seeds) in the order they happened)."""
    monkeypatch.setattr(memory, "ONE_SEED_BYTES", 1 if large else 1 << 40)
    steps = record_steps(monkeypatch)
    session = Session(Settings(op_dir=RMSNORM, device="cpu", shape_ids=[SMALL_WORKLOAD]))
    neighbour = subprocess.Popen(["sleep", "120"])  # another child of this process: left alone
    states = modes._start(session, {"A": CANDIDATES / kernel})
    try:
        modes._correctness(session, states)
    finally:
        # each worker alone: stop_workers also kills every other child of this process as a stray (here,
        # the test session's own fake model server: a red CI run)
        for ks in states:
            if ks.worker is not None:
                ks.worker.close()
    assert neighbour.poll() is None, "the test killed a process that is not its worker's"
    neighbour.kill()
    neighbour.wait()
    (idx,) = session.indices
    return session, states[0].verdicts[idx], steps


def test_a_large_workload_is_checked_one_seed_at_a_time_reference_first(monkeypatch) -> None:
    session, verdict, steps = correctness("rmsnorm_torch", monkeypatch, large=True)
    assert verdict.status == "PASS", verdict.message
    seeds = len(session.seeds)
    assert seeds >= 3
    assert steps == [step for n in range(seeds) for step in (("reference", [n]), ("run", 1))]


def test_a_small_workload_keeps_every_seed_at_once_with_the_worker_computing_beside_the_parent(
    monkeypatch,
) -> None:
    session, verdict, steps = correctness("rmsnorm_torch", monkeypatch, large=False)
    assert verdict.status == "PASS", verdict.message
    assert steps == [("run", len(session.seeds)), ("reference", [0, 1, 2])]


def test_a_large_workloads_wrong_kernel_fails_on_its_first_seed_and_is_not_called_again(monkeypatch) -> None:
    _, verdict, steps = correctness("adv_all_zeros", monkeypatch, large=True)
    assert verdict.status == "INCORRECT" and verdict.message.startswith("seed 0:"), verdict.message
    assert steps == [("reference", [0]), ("run", 1)]


def test_a_large_workloads_input_mutation_is_caught_seed_by_seed(monkeypatch) -> None:
    _, verdict, _ = correctness("adv_inplace_input", monkeypatch, large=True)
    assert verdict.status == "REWARD_HACK" and "modified" in verdict.message, verdict.message
