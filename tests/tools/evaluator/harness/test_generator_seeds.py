"""A workload whose inputs come from the operator's own slow generator is checked on as many correctness
seeds as that generator draws in about 3 s (memory.generator_seeds), at least one, and the result says so.

Why: both processes draw every seed's inputs, and a public generator that fills a tensor element by
element (034 vision-language cross attention, ~5 s a draw at batch 64) drew for 224 s of a 273 s
evaluation on the H200 (round 21). The harness's own random draws are never limited this way, and a
generator not yet timed gets its first seed alone, which times it, before the others are sent."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from aka_graph.tools.evaluator.harness import memory, modes
from aka_graph.tools.evaluator.harness.memory import generator_seeds
from aka_graph.tools.evaluator.harness.session import Session, Settings
from tests.conftest import REPO_ROOT, SOL_FIXTURES
from tests.tools.evaluator.harness.correctness_steps import record_steps

SLOW = REPO_ROOT / "tests" / "fixtures" / "sol" / "slow_elementwise_generator"


@pytest.mark.parametrize(
    ("generation_s", "seeds", "checked"),
    [
        (None, 3, 3),
        (0.0, 3, 3),
        (0.05, 3, 3),
        (1.0, 3, 3),
        (1.2, 3, 2),
        (1.6, 3, 1),
        (5.0, 3, 1),
        (0.2, 1, 1),
    ],
)
def test_a_slow_generators_workload_keeps_as_many_seeds_as_it_draws_in_three_seconds(
    generation_s: float | None, seeds: int, checked: int
) -> None:
    assert generator_seeds(generation_s, seeds) == checked


def _reference_kernel(op_dir: Path, into: Path) -> Path:
    source = json.loads((op_dir / "definition.json").read_text())["reference"]
    into.mkdir(parents=True, exist_ok=True)
    (into / "kernel.py").write_text(source + "\n\nDESTINATION_PASSING_STYLE = False\n")
    return into


def _correctness(op_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Session, Any, list]:
    """The correctness phase of the operator's own reference as the candidate; (session, its kernel
    state, the seed groups sent to the worker in order)."""
    sent: list[list[int]] = []
    send_run = modes._send_run

    def recorded(session: Session, active: list, idx: int, seeds: list) -> dict:
        sent.append([session.seeds.index(tuple(s)) for s in seeds])
        return send_run(session, active, idx, seeds)

    monkeypatch.setattr(modes, "_send_run", recorded)
    session = Session(Settings(op_dir=op_dir, device="cpu"))
    states = modes._start(session, {"A": _reference_kernel(op_dir, tmp_path / "kernel")})
    try:
        modes._correctness(session, states)
    finally:
        for ks in states:
            if ks.worker is not None:
                ks.worker.close()
    return session, states[0], sent


def test_a_generator_slower_than_the_budget_is_checked_on_its_first_seed_alone_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixture's generator sleeps 50 ms a draw; the budget is moved below that (as a 5 s draw
    stands to 3 s). The first workload's draw was timed when the reference's contract was probed on it;
    the second's is timed on its first seed, sent alone."""
    monkeypatch.setattr(memory, "CORRECTNESS_GENERATION_S", 0.04)
    session, ks, sent = _correctness(SLOW, tmp_path, monkeypatch)
    assert [ks.verdicts[i].status for i in session.indices] == ["PASS", "PASS"]
    assert sent == [[0], [0]]
    for idx in session.indices:
        assert ks.seeds_checked[idx] == 1
        entry = modes._workload_entry(session, ks, idx, {})
        assert entry["seeds_checked"] == 1
        assert f"correctness checked on 1 of {len(session.seeds)} seeds" in entry["message"]


def test_a_generator_within_the_budget_is_timed_on_its_first_seed_then_checked_on_every_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, ks, sent = _correctness(SLOW, tmp_path, monkeypatch)
    every = list(range(len(session.seeds)))
    assert [ks.verdicts[i].status for i in session.indices] == ["PASS", "PASS"]
    assert sent == [every, [0], every[1:]]  # the probed workload at once; the other: its first seed alone
    for idx in session.indices:
        assert ks.seeds_checked[idx] == len(session.seeds)
        assert "correctness checked on" not in modes._workload_entry(session, ks, idx, {})["message"]


def test_the_harness_own_random_draws_keep_every_seed_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rmsnorm's inputs are the harness's own draws: never split, never limited, however slow."""
    monkeypatch.setattr(memory, "CORRECTNESS_GENERATION_S", 1e-9)
    monkeypatch.setattr(memory, "ONE_SEED_BYTES", 1 << 40)
    session, ks, sent = _correctness(SOL_FIXTURES / "rmsnorm", tmp_path, monkeypatch)
    assert all(ks.verdicts[i].status == "PASS" for i in session.indices)
    assert sent == [list(range(len(session.seeds)))] * len(session.indices)


@pytest.mark.parametrize(
    ("entrypoint", "kind", "device", "apart"),
    [
        ("get_inputs", "sol", "cuda", True),  # the operator's own generator on a GPU
        (None, "native", "cuda", True),  # a native input.py
        (None, "sol", "cuda", False),  # the harness's own random draws: a few large kernels
        ("get_inputs", "sol", "cpu", False),  # a host: two processes on two cores do draw at once
    ],
)
def test_only_the_operators_own_generator_on_a_gpu_draws_apart_from_the_worker(
    entrypoint: str | None, kind: str, device: str, apart: bool
) -> None:
    session = SimpleNamespace(
        op=SimpleNamespace(custom_inputs_entrypoint=entrypoint, kind=kind), device=torch.device(device)
    )
    session.own_generator = Session.own_generator.fget(session)  # type: ignore[attr-defined]
    assert Session.draws_apart.fget(session) is apart  # type: ignore[attr-defined]


def test_drawing_apart_computes_each_seeds_reference_before_the_worker_is_sent_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Session, "draws_apart", property(lambda self: True))
    steps = record_steps(monkeypatch)  # (wrapped by _correctness's own record)
    session, ks, _ = _correctness(SLOW, tmp_path, monkeypatch)
    assert [ks.verdicts[i].status for i in session.indices] == ["PASS", "PASS"]
    every = list(range(len(session.seeds)))
    assert steps == [
        ("reference", every),
        ("run", len(every)),
        ("reference", [0]),
        ("run", 1),
        ("reference", every[1:]),
        ("run", len(every) - 1),
    ]
