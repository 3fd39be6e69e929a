"""The warm evaluator on the H200 (issue 9, Speed): what a campaign now runs (warm.py, harness serve.py).

One service evaluates every cheat of the adversarial list in a row, between two honest kernels: each must
be rejected as in its own cold evaluation (nothing the service keeps may let a cheat through), and the
honest kernel after them must still PASS. The memory-heavy MoE fixture, evaluated twice by one service,
must PASS both times: what the long-lived parent keeps must leave the next worker the memory a cold
evaluation has.

Run: python3 -m pytest -m gpu tests/gpu/test_warm_service_gpu.py -v -s"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from aka_graph.tools.evaluator import warm
from aka_graph.tools.evaluator.evaluation import evaluate_kernel
from aka_graph.tools.evaluator.sandbox.local import LocalSandbox
from tests.conftest import SOL_FIXTURES
from tests.gpu.test_adversarial_gpu import CHEATS, GPU_CANDIDATES, SIDE_STREAM, gains_nothing
from tests.tools.evaluator.harness.test_adversarial import (
    CANDIDATES,
    CHEAT_FIXTURE,
    CHEAT_SHAPES,
    REJECTED,
    describe,
)
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, reference_candidate

pytestmark = pytest.mark.gpu


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[LocalSandbox]:
    yield LocalSandbox(isolation="auto", base_dir=tmp_path, lock_dir=tmp_path)
    warm.stop_all()


def _warm(sandbox: LocalSandbox, op: Path, kernel: Path, out: Path, shapes: list[str] | None) -> dict:
    result = evaluate_kernel(
        sandbox, op, kernel, out, device="cuda", shape_ids=shapes, warm=True, timeout_s=600
    )
    data = json.loads((out / "result.json").read_text()) if (out / "result.json").is_file() else {}
    served = bool(data.get("service"))
    print(f"{kernel.name}: {result.status} ({'service' if served else 'cold'}) {result.message[:160]}")
    return {"status": result.status, "served": served, "message": result.message}


def test_every_cheat_is_rejected_by_one_warm_service_between_honest_kernels(
    sandbox: LocalSandbox, tmp_path: Path
) -> None:
    op = SOL_FIXTURES / "rmsnorm"
    first = _warm(sandbox, op, CANDIDATES / "rmsnorm_torch", tmp_path / "first", CHEAT_SHAPES)
    assert first["status"] == "PASS", first["message"]
    # adv_side_stream: caught where its unjoined work outlives the host's look, else reported slower than
    # the honest kernel (test_adversarial_gpu.test_unjoined_side_stream_work_is_caught_or_gains_nothing)
    cheats = [*CHEATS, "adv_graph_copy_from_first"]
    side = _warm(sandbox, op, CANDIDATES / SIDE_STREAM, tmp_path / "side", CHEAT_SHAPES)
    side_result = json.loads((tmp_path / "side" / "result.json").read_text())
    assert side["served"] and gains_nothing(side_result), describe(side_result)
    passed, served = [], 0
    for n, name in enumerate(cheats):  # a few use other fixtures: a service of their own (warm.py's key)
        fixture, shapes = CHEAT_FIXTURE.get(name, ("rmsnorm", CHEAT_SHAPES))
        where = GPU_CANDIDATES if (GPU_CANDIDATES / name).is_dir() else CANDIDATES
        got = _warm(sandbox, SOL_FIXTURES / fixture, where / name, tmp_path / f"c{n}", shapes)
        served += got["served"]
        if got["status"] not in REJECTED:
            passed.append(f"{name}: {got['status']} {got['message'][:200]}")
    last = _warm(sandbox, op, CANDIDATES / "rmsnorm_torch_returning", tmp_path / "last", CHEAT_SHAPES)
    print(
        f"{len(cheats)} cheats, {served} answered by the service, {len(cheats) - served} by the cold fallback"
    )
    assert not passed, passed
    assert last["status"] == "PASS" and last["served"], last["message"]


def test_the_memory_heavy_fixture_passes_twice_through_one_service(
    sandbox: LocalSandbox, tmp_path: Path
) -> None:
    op = FIXTURES / "memory_heavy_experts"
    kernel = tmp_path / "kernel.py"
    kernel.write_text(reference_candidate(op))
    for n in range(2):
        got = _warm(sandbox, op, kernel, tmp_path / f"r{n}", None)
        assert got["status"] == "PASS" and got["served"], got["message"]
