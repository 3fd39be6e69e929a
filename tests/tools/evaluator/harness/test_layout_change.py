"""A generator that shapes its inputs by the seed only on some seeds, or only on workloads the contract's
probe did not draw, meets a CUDA graph's fixed buffers with a set of other shapes (red team round 24: an
honest kernel got RUNTIME_ERROR where the probe, on consecutive seeds, saw no change).

The rule, from the worker to the parent:
- the probe draws seeds hashed as the timed sets' are (trusted.Reference.contract), so a generator keyed
  on a high bit of its seed is seen;
- a set of other shapes is never written into fixed buffers, not even one that broadcasts: the bench
  raises LayoutChanged before writing anything, and the worker reports the seed (bench.write_inputs);
- the parent draws that seed itself: where the shapes do differ, the operator is seed-shaped from then on
  and the round is timed again as such; a report its own draw does not bear out, or for a seed it never
  sent, is the worker's invention: REWARD_HACK (modes._seed_shaped_after_all).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from aka_graph.tools.evaluator.harness import modes
from aka_graph.tools.evaluator.harness.bench import Bench, LayoutChanged
from aka_graph.tools.evaluator.harness.loading import load_operator
from aka_graph.tools.evaluator.harness.runner import KernelRunner, digest
from aka_graph.tools.evaluator.harness.session import WorkloadVerdict
from aka_graph.tools.evaluator.harness.timing import TimedSets, summarize, timed_seed
from aka_graph.tools.evaluator.harness.trusted import Reference
from aka_graph.tools.evaluator.harness.worker import Worker
from tests.conftest import REPO_ROOT
from tests.tools.evaluator.harness.near_tie_support import candidate_source
from tests.tools.evaluator.harness.test_real_benchmark_classes import evaluate

RARE_TAIL = REPO_ROOT / "tests" / "fixtures" / "sol" / "r24_ragged_rare_tail"
CPU = torch.device("cpu")


def graph_bench(rows: int = 4) -> Bench:
    """A bench whose buffers are fixed as a captured graph's are (no GPU here: only its presence counts)."""
    runner = KernelRunner(lambda x, out: torch.mul(x, 2.0, out=out), True, [((rows, 8), torch.float32)], CPU)
    bench = Bench(runner, [torch.randn(rows, 8)], CPU, 0)
    bench.graph = SimpleNamespace(pool_bytes=0, calls=1)  # type: ignore[assignment]
    return bench


# --- the contract's probe ------------------------------------------------------------------------------


def test_the_probe_sees_a_generator_that_shapes_by_a_high_bit_of_its_seed() -> None:
    """Seed 0's neighbours 1..4 share bit 20 with it, so a probe on consecutive seeds took the rare-tail
    fixture for fixed; its hashed seeds do not."""
    assert all(((0 + k) >> 20) & 1 == 0 for k in range(1, 5))
    assert Reference(load_operator(RARE_TAIL), CPU, 0).contract(0)["layout_varies"]


def test_the_probe_still_takes_a_generator_of_fixed_shapes_for_fixed() -> None:
    op_dir = REPO_ROOT / "tests" / "fixtures" / "sol" / "custom_rng_routing"
    assert not Reference(load_operator(op_dir), CPU, 0).contract(0)["layout_varies"]


# --- the bench and the worker ----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1, 8), (3, 8), (4, 7)], ids=["broadcasts", "fewer rows", "narrower"])
def test_a_set_of_other_shapes_is_never_written_into_fixed_buffers(shape: tuple[int, int]) -> None:
    bench = graph_bench()
    held = bench.copies[0][0].clone()
    with pytest.raises(LayoutChanged) as raised:
        bench.write_inputs(0, [torch.randn(*shape)], seed=41)
    assert raised.value.seed == 41 and "(4, 8)" in str(raised.value)
    assert torch.equal(bench.copies[0][0], held)  # nothing written, not even a broadcast row


def test_a_set_of_the_buffers_shapes_is_written_as_before() -> None:
    bench = graph_bench()
    fresh = torch.randn(4, 8)
    bench.write_inputs(0, [fresh], seed=41)
    assert torch.equal(bench.copies[0][0], fresh)


def shaped_by_seed(wl: object, seed: int, scale: float) -> list[torch.Tensor]:
    """Four rows, five on odd seeds."""
    return [torch.randn(4 + seed % 2, 8)]


def worker_with(bench: Bench) -> SimpleNamespace:
    stub = SimpleNamespace(
        op=SimpleNamespace(workloads=[object()]),
        factory=SimpleNamespace(make=shaped_by_seed),
        device=CPU,
        contract={"mutated": []},
        benches={0: bench},
        sentinel=None,
        sync=lambda: None,
    )
    stub._bench = lambda idx, msg: None
    stub._revalidate = lambda *a: Worker._revalidate(stub, *a)  # type: ignore[arg-type]
    stub._revalidate_with_room = lambda *a: Worker._revalidate_with_room(stub, *a)  # type: ignore[arg-type]
    stub._fresh_inputs = lambda *a: Worker._fresh_inputs(stub, *a)  # type: ignore[arg-type]
    stub._fresh_graph_copies = lambda *a: Worker._fresh_graph_copies(stub, *a)  # type: ignore[arg-type]
    return stub


def odd(seeds: Any) -> int:
    return next(s for s in seeds if s % 2)


def test_the_worker_reports_the_seed_whose_set_did_not_fit_its_graph() -> None:
    stub = worker_with(graph_bench())
    reval_seed = odd(range(101, 200))
    reply = Worker.time(stub, {"wl": 0, "reval": [reval_seed, 1.0], "reval_first": True})  # type: ignore[arg-type]
    assert reply["layout_changed"]["seed"] == reval_seed and "error" not in reply
    pool_seed = next(p for p in range(100) if timed_seed(p, 0) % 2)
    reply = Worker.time(stub, {"wl": 0, "pool_seed": pool_seed})  # type: ignore[arg-type]
    assert reply["layout_changed"]["seed"] == timed_seed(pool_seed, 0)


# --- the parent's rule -------------------------------------------------------------------------------------


class GraphWorker:
    """A worker whose first timing round reports a set of other shapes for `seed` (the parent's re-validation
    seed where None), then times as asked; the messages it was sent are kept."""

    def __init__(self, seed: int | None = None, again: bool = False, method: str = "cuda_graph") -> None:
        self.seed, self.again, self.sent, self.method = seed, again, [], method
        self.verdicts = {0: WorkloadVerdict()}
        self.alive, self.error, self.worker = True, None, None
        self.worker_spans: dict[str, Any] = {}
        self.generation_sent: dict[int, float | None] = {}
        self.timed_sets: dict[int, list[tuple[int | None, int]]] = {}

    def request(self, msg: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if msg["cmd"] == "park":
            return {"parked": 0}
        self.sent.append(msg)
        if len(self.sent) == 1 or self.again:
            if self.seed is None:  # the seed it was sent to write in (a confirmed seed, in a second report)
                self.seed = msg["reval"][0]
            change = {"seed": self.seed, "message": "copy 0: a set of (5, 8) for buffers of (4, 8)"}
            return {"layout_changed": change}
        med, spread = summarize([5.8] * 5)
        pool = getattr(self, "pool", 5) if msg.get("pool_seed") else 0
        graph = self.method == "cuda_graph" and msg.get("pool_seed") is not None
        return {"latency_us": med, "spread_pct": spread, "samples_us": [5.8] * 5, "violations": [],
                "method": self.method, "calls": 10, "pool_size": pool,
                "graph_fresh": 3 if graph else 0}  # fmt: skip


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """A CUDA session of a generator whose shapes the parent finds to differ on odd seeds."""
    monkeypatch.setattr(modes, "check_worker", lambda *a, **k: None)
    for name in ("verify_timed_calls", "verify_graph_copies", "outside_work", "settle"):
        monkeypatch.setattr(modes, name, lambda *a, **k: None)
    drawn: list[int] = []

    def shapes_differ(idx: int, seed: int, bench_seed: int) -> bool:
        drawn.append(seed)
        return seed % 2 != bench_seed % 2

    reference = SimpleNamespace(
        shapes_differ=shapes_differ,
        seed_may_shape=True,
        drawn=drawn,
        generation_s={},
        revalidation_inputs=lambda *a: [torch.zeros(4, 8)],
        outputs=lambda idx, inputs: ([inputs[0]], None),
    )
    return SimpleNamespace(
        contract={}, bench_seed=0, l2_bytes=0, call_timeout=1.0, device=torch.device("cuda"), sol={},
        reference=reference, judge_outputs=lambda verdict, got, want, *a, **k: torch.equal(got[0], want[0]),
    )  # fmt: skip


def test_a_confirmed_change_makes_the_operator_seed_shaped_and_the_round_is_timed_again(
    session: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(modes, "fresh_seed", iter(range(1, 1000, 2)).__next__)  # odd: other shapes
    ks = GraphWorker()
    assert modes._time_round(session, ks, 0) == pytest.approx(5.8)
    verdict = ks.verdicts[0]
    assert verdict.status == "PASS" and "inputs' shapes change with the seed" in verdict.message
    assert session.contract["layout_varies"] and session.reference.drawn[0] == ks.sent[0]["reval"][0]
    first, second = ks.sent
    assert first["reval"] is not None and first["pool_seed"] is not None
    assert second["reval"] is None and second["pool_seed"] is None  # fixed buffers, nothing written


@pytest.mark.parametrize(
    ("worker", "found"),
    [
        (GraphWorker(seed=2), "does not show"),  # an even seed: the parent's draw has the bench's shapes
        (GraphWorker(seed=12345), "never sent"),  # not the re-validation's seed nor a graph copy's
    ],
    ids=["shapes the same", "seed never sent"],
)
def test_a_report_the_parents_draw_does_not_bear_out_is_the_workers_invention(
    session: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, worker: GraphWorker, found: str
) -> None:
    monkeypatch.setattr(modes, "fresh_seed", iter([2, 4, 6, 8]).__next__)  # re-validation at seed 2
    assert modes._time_round(session, worker, 0) is None
    verdict = worker.verdicts[0]
    assert verdict.status == "REWARD_HACK" and found in verdict.message
    assert not session.contract.get("layout_varies") and len(worker.sent) == 1


def test_a_second_report_once_the_operator_is_seed_shaped_is_the_workers_invention(
    session: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Timed as seed-shaped on a GPU, nothing is written into the graph's buffers: no set can meet them."""
    monkeypatch.setattr(modes, "fresh_seed", iter(range(1, 1000, 2)).__next__)
    ks = GraphWorker(again=True)
    assert modes._time_round(session, ks, 0) is None
    assert ks.verdicts[0].status == "REWARD_HACK" and len(ks.sent) == 2


# --- end to end ------------------------------------------------------------------------------------------

LARGER_ONLY = REPO_ROOT / "tests" / "fixtures" / "sol" / "r25_ragged_larger_workloads_only"


@pytest.mark.slow
@pytest.mark.parametrize("candidate", ["honest25_ragged_capturable", "redteam23_h01_ragged_honest"])
def test_an_honest_kernel_passes_where_only_a_workload_the_probe_skipped_is_shaped_by_its_seed(
    tmp_path: Path, candidate: str
) -> None:
    """The probe draws the smallest workload (equal rows, whatever the seed): the operator's contract says
    fixed shapes, and on a host the larger workload's timed sets of other shapes take the buffers' place.
    (On a GPU its graph meets them: tests/gpu/test_seed_shaped_gpu.py.)"""
    _, res = evaluate(tmp_path, LARGER_ONLY, candidate_source(candidate))
    assert res["status"] == "PASS", res["message"]
    assert all(w["status"] == "PASS" and w["latency_us"] for w in res["workloads"])


# --- re-validation of a seed-shaped operator on a GPU ------------------------------------------------------


class TimedOnce(GraphWorker):
    """A worker that times and re-validates honestly as asked (nothing of other shapes is sent to it)."""

    def __init__(self, method: str = "cuda_graph") -> None:
        super().__init__(seed=0, method=method)
        self.sent = [{}]  # as if its first round were behind it
        self.clock_pairs: dict[int, Any] = {}

    def request(self, msg: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        reply = super().request(msg, timeout_s)
        if msg.get("reval") is not None:  # the parent's re-validation set (the fixture's reference: zeros)
            reply.update(reval_digest=digest([torch.zeros(4, 8)]), reval_outputs=[torch.zeros(4, 8)])
        return reply


@pytest.mark.parametrize(
    ("seeds", "reval"),
    [([3, 5, 8, 9, 11, 13], [8, 1.0]), ([3, 5, 7, 9, 11, 13, 15], None)],
    ids=["the third seed has the bench's shapes", "no seed of four has them"],
)
def test_a_seed_shaped_operator_is_revalidated_on_a_gpu_where_a_fresh_seed_has_the_bench_shapes(
    session: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, seeds: list[int], reval: list[Any] | None
) -> None:
    session.contract["layout_varies"] = True
    monkeypatch.setattr(modes, "fresh_seed", iter([1, 2, *seeds]).__next__)  # reval, pool, then the search
    ks = TimedOnce()
    assert modes._time_round(session, ks, 0) == pytest.approx(5.8)
    msg = ks.sent[1]
    assert msg["reval"] == reval and msg["pool_seed"] is None  # never the graph's copies: fixed buffers
    assert session.reference.drawn == seeds[: 3 if reval else 4]
    assert ks.verdicts[0].revalidated == (reval is not None)


def test_a_seed_shaped_operator_on_a_host_keeps_its_fresh_timed_sets_and_no_revalidation(
    session: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    session.contract["layout_varies"] = True
    session.device = torch.device("cpu")
    monkeypatch.setattr(modes, "fresh_seed", iter([1, 2, 3, 4, 5]).__next__)
    monkeypatch.setattr(modes, "timed_round", lambda ks, msg, *a: ks.request(msg, 1.0))
    ks = TimedOnce()
    assert modes._time_round(session, ks, 0) == pytest.approx(5.8)
    assert ks.sent[1]["reval"] is None and ks.sent[1]["pool_seed"] == 2 and session.reference.drawn == []
    assert ks.timed_sets == {0: [TimedSets(2, 5)]}  # the sets the reference is timed on too (refcache.py)


@pytest.mark.parametrize(
    ("method", "recorded"), [("cuda_event", TimedSets(2, 5)), ("cuda_graph", TimedSets(2, 3, rotated=True))]
)
def test_a_gpu_round_records_the_sets_its_timed_calls_ran_on_for_the_reference(
    session: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, method: str, recorded: TimedSets
) -> None:
    """Calls a GPU cannot capture are timed by CUDA events, one per fresh set of the round's pool, as a
    host's are; a graph's replays rotate over copies holding fresh sets (3 here). Where the operator's
    generator draws them, the reference is timed on the same sets (refcache.own_set_timings; red team
    round 27's h01 on a GPU)."""
    monkeypatch.setattr(modes, "fresh_seed", iter([1, 2, 3, 4]).__next__)  # reval, pool, reval_first
    ks = TimedOnce(method=method)
    assert modes._time_round(session, ks, 0) == pytest.approx(5.8)
    assert ks.sent[1]["pool_seed"] == 2
    assert ks.timed_sets == {0: [recorded]}
    assert session.reference.drawn == []  # a GPU's sets are not looked at for their shapes


@pytest.mark.parametrize(
    ("reply", "pool_seed", "on_gpu", "recorded"),
    [
        ({"pool_size": 5}, 9, False, TimedSets(9, 4)),  # a host's calls, a set each
        ({"pool_size": 0}, 9, False, TimedSets(None, 4)),  # no fresh sets: the bench's one
        ({"pool_size": 5, "method": "cuda_event"}, 9, True, TimedSets(9, 4)),
        ({"pool_size": 0, "method": "cuda_event"}, 9, True, TimedSets(None, 4)),  # over the pool's bytes
        ({"graph_fresh": 3, "method": "cuda_graph"}, 9, True, TimedSets(9, 3, rotated=True)),
        ({"graph_fresh": 0, "method": "cuda_graph"}, 9, True, TimedSets(None, 4)),
        ({"pool_size": 5, "method": "cuda_graph"}, 9, True, TimedSets(None, 4)),  # replays: not a set a call
        ({"graph_fresh": 3, "method": "cuda_event"}, 9, True, TimedSets(None, 4)),  # events without a pool
        ({"pool_size": 5, "graph_fresh": 3, "method": "cuda_graph"}, None, True, TimedSets(None, 4)),
        ({"pool_size": 5}, None, False, TimedSets(None, 4)),  # no pool seed of the parent's: no sets of it
    ],
)
def test_the_sets_a_round_ran_on_follow_the_parents_pool_seed_and_how_the_calls_were_timed(
    reply: dict[str, Any], pool_seed: int | None, on_gpu: bool, recorded: TimedSets
) -> None:
    assert modes.timed_on({**reply, "samples_us": [1.0] * 4}, pool_seed, on_gpu) == recorded


# --- a host round on sets of other shapes, where the probe saw fixed ones -----------------------------------


def host_session(session: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, fresh: list[int]) -> TimedOnce:
    session.device = torch.device("cpu")
    monkeypatch.setattr(modes, "fresh_seed", iter(fresh).__next__)
    monkeypatch.setattr(modes, "timed_round", lambda ks, msg, *a: ks.request(msg, 1.0))
    return TimedOnce()


def test_a_host_round_whose_fresh_sets_took_other_shapes_makes_the_operator_seed_shaped(
    session: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe said fixed shapes; the round's sets (timed_seed(pool seed, j), drawn by the parent) have
    other shapes than the bench's on odd seeds: from here on the reference is timed on the kernels' sets."""
    pool_seed = next(p for p in range(2, 100) if any(timed_seed(p, j) % 2 for j in range(5)))
    ks = host_session(session, monkeypatch, [1, pool_seed, 3, 4])
    assert modes._time_round(session, ks, 0) == pytest.approx(5.8)
    assert session.contract["layout_varies"] and "shapes follow the seed" in ks.verdicts[0].message
    assert ks.timed_sets == {0: [TimedSets(pool_seed, 5)]}
    assert set(session.reference.drawn) <= {timed_seed(pool_seed, j) for j in range(5)}


def test_a_host_round_on_sets_of_the_bench_shapes_leaves_the_contract_as_it_was(
    session: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool_seed = next(p for p in range(2, 1000) if all(timed_seed(p, j) % 2 == 0 for j in range(5)))
    ks = host_session(session, monkeypatch, [1, pool_seed, 3, 4])
    assert modes._time_round(session, ks, 0) == pytest.approx(5.8)
    assert not session.contract.get("layout_varies") and not ks.verdicts[0].message
    assert ks.timed_sets == {0: [TimedSets(pool_seed, 5)]}  # recorded all the same: a later round may flip it
    assert sorted(session.reference.drawn) == sorted(timed_seed(pool_seed, j) for j in range(5))


def test_fixed_shaped_inputs_are_not_drawn_again_to_look_at_their_shapes(
    session: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random tensors of declared shapes (no generator of the operator's own) cannot follow the seed."""
    session.reference.seed_may_shape = False
    ks = host_session(session, monkeypatch, [1, 2, 3, 4])
    assert modes._time_round(session, ks, 0) == pytest.approx(5.8)
    assert session.reference.drawn == [] and not session.contract.get("layout_varies")


def test_only_the_sets_a_round_ran_on_are_looked_at(
    session: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five calls on a pool of two sets ran on sets 0 and 1 only (call i on set i % 2): a set the pool
    never held says nothing of what the kernel was timed on."""
    pool_seed = next(
        p for p in range(2, 5000)
        if all(timed_seed(p, j) % 2 == 0 for j in range(2)) and any(timed_seed(p, j) % 2 for j in range(2, 5))
    )  # fmt: skip
    ks = host_session(session, monkeypatch, [1, pool_seed, 3, 4])
    ks.pool = 2
    assert modes._time_round(session, ks, 0) == pytest.approx(5.8)
    assert not session.contract.get("layout_varies")
    assert sorted(session.reference.drawn) == sorted(timed_seed(pool_seed, j) for j in range(2))
