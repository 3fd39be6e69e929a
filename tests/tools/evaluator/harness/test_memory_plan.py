"""The harness's own memory (issue 9, class 2): which copies it makes (memory.plan_memory, a table), how an
input is checked for modification without a clone (fingerprint.py), how eager timing perturbs inputs
without a pristine copy (bench._flip_signs_), that large benches of other workloads are parked and
regenerated, and that the mixed seed is drawn one tensor at a time yet gives exactly the inputs it
always gave. The end-to-end peak memory on the CPU: test_memory_footprint.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from aka_graph.tools.evaluator.harness import bench as bench_mod
from aka_graph.tools.evaluator.harness import fingerprint as fingerprint_mod
from aka_graph.tools.evaluator.harness import inputs as inputs_mod
from aka_graph.tools.evaluator.harness.bench import (
    KEEP_LARGE_BYTES,
    Bench,
    FreshSets,
    _flip_signs_,
    park_large,
    worth_parking,
)
from aka_graph.tools.evaluator.harness.fingerprint import InputSnapshot, fingerprint
from aka_graph.tools.evaluator.harness.inputs import InputFactory, _mix_interior_
from aka_graph.tools.evaluator.harness.loading import load_operator
from aka_graph.tools.evaluator.harness.memory import (
    GIB,
    MIB,
    POOL_BYTES,
    SMALL_BYTES,
    MemoryPlan,
    output_bytes,
    plan_memory,
)
from aka_graph.tools.evaluator.harness.runner import KernelRunner
from aka_graph.tools.evaluator.harness.timing import rotation_copies
from tests.conftest import REPO_ROOT

H200_L2 = 60 * MIB
MOE_128 = 128 * 12288 * 4096 * 2 + 4 * 4096 * 2  # memory_heavy_experts' largest workload: 12.9 GB in
MOE_OUT = 4 * 12288 * 2

# input bytes, output bytes, spare, keyword arguments -> the plan
PLAN_TABLE = [
    # a small call on the H200: everything it wants (seeds kept, a clone, 90 rotated copies)
    (MIB, MIB, 100 * GIB, {"seeds": 3, "l2_bytes": H200_L2, "wanted_copies": 90},
     MemoryPlan(keep_seeds=True, clone_inputs=True, timed_copies=90, pristine=True, pool_sets=0)),
    # the MoE fixture's 12.9 GB workload: one seed at a time, a fingerprint, no rotated copy, no pool
    (MOE_128, MOE_OUT, 80 * GIB, {"seeds": 3, "l2_bytes": H200_L2, "wanted_copies": 1, "pool_wanted": 30},
     MemoryPlan(keep_seeds=False, clone_inputs=False, timed_copies=1, pristine=True, pool_sets=0)),
    # inputs >= 3x the L2: no rotated copy even when one is asked for
    (3 * H200_L2, 0, 100 * GIB, {"l2_bytes": H200_L2, "wanted_copies": 4},
     MemoryPlan(keep_seeds=False, clone_inputs=False, timed_copies=1, pristine=True, pool_sets=0)),
    (3 * H200_L2 - 1, 0, 100 * GIB, {"l2_bytes": H200_L2, "wanted_copies": 2},
     MemoryPlan(keep_seeds=False, clone_inputs=False, timed_copies=2, pristine=True, pool_sets=0)),
    # ... and little free: no pristine copy either (eager timing flips signs in place)
    (MOE_128, MOE_OUT, 5 * GIB, {"seeds": 3, "l2_bytes": H200_L2, "eager_copies": 1, "pool_wanted": 30},
     MemoryPlan(keep_seeds=False, clone_inputs=False, timed_copies=1, pristine=False, pool_sets=0)),
    # eager timing's pristine twins: one per copy it keeps (32 copies of 1 MiB after a failed capture)
    (MIB, 0, 20 * MIB, {"eager_copies": 32},
     MemoryPlan(keep_seeds=False, clone_inputs=True, timed_copies=1, pristine=False, pool_sets=0)),
    (MIB, 0, 40 * MIB, {"eager_copies": 32},
     MemoryPlan(keep_seeds=False, clone_inputs=True, timed_copies=1, pristine=True, pool_sets=0)),
    # rotated copies bounded by what is free: the existing set + 5 more of 10 MiB in 50 MiB
    (10 * MIB, 0, 50 * MIB, {"l2_bytes": H200_L2, "wanted_copies": 18},
     MemoryPlan(keep_seeds=False, clone_inputs=True, timed_copies=6, pristine=False, pool_sets=0)),
    # the kept seeds: up to SMALL_BYTES in all (32 MiB x 2 earlier seeds), not beyond
    (32 * MIB, 0, 100 * GIB, {"seeds": 3},
     MemoryPlan(keep_seeds=True, clone_inputs=True, timed_copies=1, pristine=True, pool_sets=0)),
    (33 * MIB, 0, 100 * GIB, {"seeds": 3},
     MemoryPlan(keep_seeds=False, clone_inputs=True, timed_copies=1, pristine=True, pool_sets=0)),
    # the clone: up to SMALL_BYTES, and never beyond what is free
    (SMALL_BYTES + 1, 0, 100 * GIB, {},
     MemoryPlan(keep_seeds=False, clone_inputs=False, timed_copies=1, pristine=True, pool_sets=0)),
    (MIB, 0, MIB - 1, {"seeds": 2},
     MemoryPlan(keep_seeds=False, clone_inputs=False, timed_copies=1, pristine=False, pool_sets=0)),
    # fresh timed sets: every one wanted while 1 GiB of them covers it, fewer after, none below two
    (8 * MIB, 0, 100 * GIB, {"pool_wanted": 30},
     MemoryPlan(keep_seeds=False, clone_inputs=True, timed_copies=1, pristine=True, pool_sets=30)),
    (100 * MIB, 0, 100 * GIB, {"pool_wanted": 30},
     MemoryPlan(keep_seeds=False, clone_inputs=False, timed_copies=1, pristine=True, pool_sets=10)),
    (600 * MIB, 0, 100 * GIB, {"pool_wanted": 30},
     MemoryPlan(keep_seeds=False, clone_inputs=False, timed_copies=1, pristine=True, pool_sets=0)),
    # ... and only when one set (drawn while the pristine copy exists) fits beside the rest
    (100 * MIB, 0, 150 * MIB, {"pool_wanted": 5},
     MemoryPlan(keep_seeds=False, clone_inputs=False, timed_copies=1, pristine=True, pool_sets=0)),
    # nothing free at all: nothing extra, the one set that exists
    (4096, 0, 0, {"seeds": 3, "wanted_copies": 100, "pool_wanted": 5},
     MemoryPlan(keep_seeds=False, clone_inputs=False, timed_copies=1, pristine=False, pool_sets=0)),
]  # fmt: skip


@pytest.mark.parametrize(("inputs", "outputs", "spare", "kwargs", "want"), PLAN_TABLE)
def test_the_memory_plan_table(inputs: int, outputs: int, spare: int, kwargs: dict, want: MemoryPlan) -> None:
    assert plan_memory(inputs, outputs, spare, **kwargs) == want


@pytest.mark.parametrize("inputs", [3 * H200_L2, GIB, MOE_128, 40 * GIB])
@pytest.mark.parametrize("spare", [0, GIB, 80 * GIB, 1 << 50])
def test_a_large_invocation_gets_at_most_one_extra_copy_of_itself(inputs: int, spare: int) -> None:
    """The stated bound: once one call's inputs are large (> SMALL_BYTES and >= 3x the L2), the harness's
    extra copies per phase are at most one more set of inputs (the pristine copy, eager timing only) and
    one fresh timed set at a time: no kept seeds, no clone, no rotated copy, whatever is free."""
    wanted = rotation_copies(inputs, H200_L2, est_us=10.0)
    plan = plan_memory(inputs, MIB, spare, seeds=5, l2_bytes=H200_L2, wanted_copies=wanted, pool_wanted=30)
    assert wanted == 1 and not plan.keep_seeds and not plan.clone_inputs and plan.timed_copies == 1
    assert plan.pool_sets * inputs <= POOL_BYTES
    assert not plan.pristine or inputs <= spare


def test_output_bytes_from_the_declared_shapes() -> None:
    assert output_bytes([((4, 12288), torch.bfloat16), ((), torch.float32), ((3, 0), torch.int64)]) == 98308


# --- the fingerprint: a modified input is found without a clone ----------------------------------------


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 1000 elements, so a few thousand elements exercise many chunks and the tail."""
    monkeypatch.setattr(fingerprint_mod, "CHUNK", 1000)
    fingerprint_mod._WEIGHTS.clear()


@pytest.mark.parametrize(
    "dtype", [torch.bfloat16, torch.float32, torch.float8_e4m3fn, torch.int64, torch.bool]
)
def test_the_fingerprint_finds_any_single_changed_element(small_chunks: None, dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(0)
    x = (torch.randn(3, 1777, generator=gen) * 3).to(dtype) if dtype != torch.bool else torch.rand(5331) > 0.5
    before = fingerprint(x)
    assert torch.equal(fingerprint(x.clone()), before)  # identical bits: identical fingerprint
    flat = x.view(-1)
    for pos in (0, 999, 1000, 2500, flat.numel() - 1):  # chunk edges and the tail chunk
        y = flat.clone()
        y.view(torch.uint8 if y.element_size() == 1 else y.dtype)[pos : pos + 1].view(torch.uint8)[0] ^= 1
        assert not torch.equal(fingerprint(y), before), pos


def test_the_fingerprint_finds_swapped_elements_and_keeps_nan_bits(small_chunks: None) -> None:
    x = torch.randn(4000)
    x[7] = float("nan")
    before = fingerprint(x)
    y = x.clone()
    y[[10, 20]] = y[[20, 10]]  # the same values, the same sum: the weighted sum differs
    assert not torch.equal(fingerprint(y), before)
    assert torch.equal(fingerprint(x.clone()), before)  # NaN compares by its bits: no false alarm


def test_an_expanded_input_is_fingerprinted_by_its_base(small_chunks: None) -> None:
    base = torch.randn(1, 3000)
    expanded = base.expand(4, 3000)
    assert torch.equal(fingerprint(expanded), fingerprint(base))


@pytest.mark.parametrize("exact", [True, False])
def test_a_snapshot_names_the_modified_input_and_nothing_else(small_chunks: None, exact: bool) -> None:
    values = [torch.randn(2500), 3, torch.arange(4000), torch.randn(1, 8).expand(5, 8)]
    snap = InputSnapshot(values, exact)
    assert snap.changed(values) == [] and snap.changed(values) == []  # fingerprinting changes nothing
    values[2][3999] += 1
    assert snap.changed(values) == [2]
    values[0].resize_(2400)  # a changed shape is a change too
    assert snap.changed(values) == [0, 2]


# --- perturbation without a pristine copy -------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float8_e5m2])
def test_sign_flips_are_exact_and_differ_from_call_to_call(dtype: torch.dtype) -> None:
    original = torch.randn(64, 100).to(dtype)
    states = []
    for i in range(6):
        x = original.clone()
        _flip_signs_(x, i)
        assert torch.equal(x.float().abs(), original.float().abs())  # magnitudes exact: valid inputs
        states.append(x.clone())
        _flip_signs_(x, i)  # the same call's flips undo themselves: exact, no drift
        assert torch.equal(x.view(torch.uint8), original.view(torch.uint8))
    bits = [s.view(torch.uint8) for s in [original, *states]]
    assert all(not torch.equal(a, b) for n, a in enumerate(bits) for b in bits[n + 1 :])


def test_fresh_sets_are_drawn_one_at_a_time() -> None:
    drawn: list[int] = []
    sets = FreshSets(3, lambda j: drawn.append(j) or [torch.full((2,), float(j))])
    assert len(sets) == 3 and sets and drawn == []  # nothing drawn up front
    assert sets[2][0].tolist() == [2.0, 2.0] and drawn == [2]
    with pytest.raises(IndexError):
        sets[3]


# --- the mixed seed, drawn one tensor at a time --------------------------------------------------------


@pytest.mark.parametrize("chunk", [1 << 22, 200])
def test_the_mixed_seed_gives_the_inputs_it_always_gave(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """One mix tensor at a time, or (a tensor drawn in chunks: 200 elements here, 3 rows of 64, so chunk
    edges fall inside the interior's first and last rows) written into the interior as it is drawn, must
    not change a single value: the old way drew the mix seed's whole set, then mixed each random input's
    interior from it."""
    monkeypatch.setattr(inputs_mod, "CHUNK_ELEMENTS", chunk)
    op = load_operator(REPO_ROOT / "tests" / "fixtures" / "sol" / "memory_heavy_experts_cpu")
    wl = op.workloads[0]
    wl = type(wl)(**{**wl.__dict__, "axes": {**wl.axes, "num_experts": 3, "hidden": 64, "inter": 32}})
    factory = InputFactory(op, torch.device("cpu"))
    seed_set, mix_set = factory._make(wl, 11, 1.0), factory._make(wl, 12, 1.0)
    for v, o in zip(seed_set, mix_set, strict=True):
        if isinstance(v, torch.Tensor) and v.numel():
            _mix_interior_(v, o)
    mixed = factory.make(wl, 11, 1.0, 12)
    assert all(
        torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b
        for a, b in zip(mixed, seed_set, strict=True)
    )
    plain = factory.make(wl, 11, 1.0)[1]
    assert not torch.equal(mixed[1], plain)  # mixed: the interior is the other seed's
    assert torch.equal(mixed[1][0], plain[0]) and torch.equal(mixed[1][-1], plain[-1])  # the edges are not


# --- benches: no pristine copy when none fits; large benches of other workloads parked --------------------


def _recording_runner(seen: list[torch.Tensor]) -> KernelRunner:
    def run(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        seen.append(x.clone())
        return x * 2

    return KernelRunner(run, False, [((64, 50), torch.float32)], torch.device("cpu"))


def test_with_no_room_for_a_pristine_copy_timed_calls_see_sign_flipped_inputs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A device with nothing free (injected: the real free memory cannot be taken away safely): the bench
    keeps no pristine copy, says so, and every timed call still gets another input, of the same
    magnitudes, while an integer input (indices) is never touched."""
    monkeypatch.setattr(bench_mod, "spare_bytes", lambda device: 0)
    seen: list[torch.Tensor] = []
    x, idx = torch.randn(64, 50), torch.arange(10)
    bench = Bench(_recording_runner(seen), [x, idx], torch.device("cpu"), 0)
    assert bench.flip and not bench.pristine and "no room for a pristine copy" in bench.notes[0]
    timing = bench.measure()
    timed = seen[1:]  # the first call sized the timing
    assert len(timed) == len(timing.samples_us) >= 2
    assert all(torch.equal(t.abs(), x.abs()) for t in timed)
    assert all(not torch.equal(a, b) for n, a in enumerate(timed) for b in timed[n + 1 :])
    assert torch.equal(bench.copies[0][1], torch.arange(10))


def test_a_parked_bench_is_regenerated_from_its_seed_and_keeps_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bench_mod, "SMALL_BYTES", 0)  # every bench counts as large here
    draws: list[int] = []

    def draw(seed: int) -> list[torch.Tensor]:
        draws.append(seed)
        return [torch.randn(64, 50, generator=torch.Generator().manual_seed(seed)), torch.arange(3)]

    first = Bench(_recording_runner([]), draw(1), torch.device("cpu"), 0, regenerate=lambda: draw(1))
    expected = first.copies[0][0].clone()
    park_large(torch.device("cpu"))  # before a second workload's bench is built
    assert (
        first.parked == [] and first.copies == [] and first.pristine == []
    )  # nothing kept, not even on host
    second = Bench(_recording_runner([]), draw(2), torch.device("cpu"), 0, regenerate=lambda: draw(2))
    assert second.parked is None
    first.measure()  # used again: rebuilt from its seed
    assert first.parked is None and draws == [1, 2, 1]
    assert first.pristine and torch.equal(first.pristine[0][0], expected)


def test_a_parked_bench_times_on_the_fresh_sets_it_was_given_before_it_was_rebuilt() -> None:
    """The worker hands a round's fresh timed sets to a bench that may be parked (a large workload's,
    parked for the parent's re-validation); rebuilding it for the timing must keep them, or every timed
    call runs on seen inputs and none is kept for the parent's check (a false REWARD_HACK)."""
    seen: list[torch.Tensor] = []

    def draw(seed: int) -> list[torch.Tensor]:
        return [torch.randn(64, 50, generator=torch.Generator().manual_seed(seed)), torch.arange(3)]

    bench = Bench(_recording_runner(seen), draw(1), torch.device("cpu"), 0, regenerate=lambda: draw(1))
    bench.park()
    sets = [draw(100 + j) for j in range(3)]
    bench.use_pool(sets)
    seen.clear()
    timing = bench.measure()  # rebuilt first (_ensure), then timed on the sets
    assert bench.parked is None and sorted(bench.kept) == list(range(len(timing.samples_us)))
    fresh = [s[0] for s in sets]
    assert any(torch.equal(x, f) for x in seen for f in fresh)


def test_a_bench_whose_graph_holds_large_temporaries_is_parked_though_its_inputs_are_small() -> None:
    """Round 18 on the H200: an attention backward's inputs are a few hundred MB, its captured calls'
    temporaries (the graph's private pool) GiBs; the worker kept every earlier workload's graph and ran
    out of memory timing the next one with 34 GiB in graph pools. The pool counts as what a bench holds."""
    small = Bench(
        _recording_runner([]), [torch.randn(8, 8), torch.arange(3)], torch.device("cpu"), 0, regenerate=list
    )
    assert small.nbytes < SMALL_BYTES and small.resident_bytes < SMALL_BYTES
    small.graph = SimpleNamespace(pool_bytes=5 * GIB)  # what GraphTimer.capture measured on a GPU
    assert small.resident_bytes >= 5 * GIB
    park_large(torch.device("cpu"))
    assert small.parked == [] and small.graph is None and small.resident_bytes == 0


def test_large_benches_stay_resident_only_while_modest_beside_what_is_free() -> None:
    """Parking costs a collection, a sync and a cache release, then a rebuild: rmsnorm's five ~300 MB
    benches on a 140 GB GPU stay; MoE experts (13 GB each) are parked before the next workload's."""
    gib = 1 << 30
    assert not worth_parking(2 * gib, 130 * gib)  # rmsnorm on an H200
    assert worth_parking(13 * gib, 120 * gib)  # an MoE experts bench: beyond KEEP_LARGE_BYTES
    assert worth_parking(2 * gib, 12 * gib)  # a small GPU: beyond an eighth of what is free
    assert worth_parking(KEEP_LARGE_BYTES + 1, 1000 * gib) and not worth_parking(KEEP_LARGE_BYTES, 1000 * gib)


@pytest.mark.parametrize(
    ("device", "reserved", "allocated", "released"),
    [
        ("cuda", 80 * GIB, 16 * GIB, True),  # round 17: the parent kept 62 GiB of a comparison's temporaries
        ("cuda", 3 * GIB, 2 * GIB + 512 * MIB, False),  # half a GiB cached: not worth a synchronization
        ("cpu", 80 * GIB, 0, False),  # the host's allocator returns memory itself
    ],
)
def test_the_parent_hands_back_large_cached_device_memory_after_judging(
    monkeypatch: pytest.MonkeyPatch, device: str, reserved: int, allocated: int, released: bool
) -> None:
    import aka_graph.tools.evaluator.harness.memory as memory_mod

    calls: list[torch.device] = []
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda d=None: reserved)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda d=None: allocated)
    monkeypatch.setattr(memory_mod, "release", lambda d, *a, **k: calls.append(d))
    memory_mod.release_cached(torch.device(device))
    assert bool(calls) is released


@pytest.mark.parametrize(
    ("cached", "held", "free", "force", "released"),
    [
        (12 * GIB, 0, 110 * GIB, False, False),  # round 21: a 5 GB-set MLP's parent beside 110 GB free
        (5 * GIB, 0, 30 * GIB, False, True),  # a fifth of what is free: the other process may need it
        (78 * GIB, 0, 40 * GIB, False, True),  # round 17: the parent's comparison temporaries
        (0, 20 * GIB, 100 * GIB, False, True),  # just let go (still held by a cycle): counted as cached
        (1 * GIB, 0, 130 * GIB, True, True),  # forced: a timing loop that ran out of memory
    ],
)
def test_cached_memory_is_handed_back_only_where_the_device_is_short_of_it(
    monkeypatch: pytest.MonkeyPatch, cached: int, held: int, free: int, force: bool, released: bool
) -> None:
    import aka_graph.tools.evaluator.harness.memory as memory_mod

    emptied: list[int] = []
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda d=None: 16 * GIB + cached)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda d=None: 16 * GIB)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda d=None: (free, 141 * GIB))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda d=None: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(1))
    memory_mod.release(torch.device("cuda"), freed=held or None, force=force)
    assert bool(emptied) is released
