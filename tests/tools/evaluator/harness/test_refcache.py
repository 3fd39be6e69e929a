"""The reference's latency is cached across evaluations (issue 9, Speed): per operator (reference source
included), workload, device and harness version, in a directory only the trusted parent writes, used only
while every worker is jailed, said in the result, and never taken from an entry it did not write itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from aka_graph.tools.evaluator.harness import refcache
from aka_graph.tools.evaluator.harness.refcache import ReferenceTimingCache, entry_key, operator_digest
from aka_graph.tools.evaluator.harness.timing import TimedSets as TS
from aka_graph.tools.evaluator.harness.timing import Timing
from tests.conftest import REPO_ROOT, SOL_FIXTURES
from tests.tools.evaluator.harness.test_gates import BATCH1

HARNESS_PARENT = REPO_ROOT / "aka_graph" / "tools" / "evaluator"
DEVICE = {"name": "NVIDIA H200", "arch": "sm_90"}
SETTINGS = {"l2_bytes": 50 << 20, "timing": "graph replays"}


def timing(lat: float = 12.5) -> Timing:
    return Timing(lat, 0.4, [lat, lat + 0.1], "cuda_graph", 2.0, ["a note"])


def test_a_stored_timing_comes_back_and_is_counted_as_a_hit(tmp_path: Path) -> None:
    cache = ReferenceTimingCache(tmp_path)
    key = entry_key("op", "0:w", DEVICE, SETTINGS)
    assert cache.get(key, "w") is None
    cache.put(key, timing())
    got = ReferenceTimingCache(tmp_path).get(key, "w")
    assert got == timing()
    assert cache.summary() == {"used": True, "directory": str(tmp_path), "cached_workloads": []}


def test_the_key_changes_with_the_reference_the_workload_the_device_and_the_settings(tmp_path: Path) -> None:
    op = tmp_path / "op"
    op.mkdir()
    (op / "definition.json").write_text('{"reference": "def run(x): return x"}')
    before = operator_digest(op)
    (op / "definition.json").write_text('{"reference": "def run(x): return x * 1"}')
    assert operator_digest(op) != before
    base = entry_key("d", "0:w", DEVICE, SETTINGS)
    assert base == entry_key("d", "0:w", dict(DEVICE), dict(SETTINGS))  # deterministic
    assert base != entry_key("d2", "0:w", DEVICE, SETTINGS)
    assert base != entry_key("d", "1:w", DEVICE, SETTINGS)
    assert base != entry_key("d", "0:w", {**DEVICE, "name": "NVIDIA B200"}, SETTINGS)
    assert base != entry_key("d", "0:w", DEVICE, {**SETTINGS, "l2_bytes": 1})


@pytest.mark.parametrize(
    "entry",
    [
        {"latency_us": float("nan")},
        {"latency_us": -1.0},
        {"latency_us": "12"},
        {"method": "made_up"},
        {"samples_us": "fast"},
        {"notes": [1]},
    ],
    ids=["nan", "negative", "string", "method", "samples", "notes"],
)
def test_an_entry_this_module_would_not_write_is_ignored(tmp_path: Path, entry: dict) -> None:
    key = entry_key("op", "0:w", DEVICE, SETTINGS)
    good = json.loads(json.dumps({"key": key, "timing": vars(timing())}))
    good["timing"].update(entry)
    (tmp_path / f"{key}.json").write_text(json.dumps(good, allow_nan=True))
    cache = ReferenceTimingCache(tmp_path)
    assert cache.get(key, "w") is None and cache.hits == []


def test_an_entry_filed_under_another_key_is_ignored(tmp_path: Path) -> None:
    key, other = entry_key("op", "0:w", DEVICE, SETTINGS), entry_key("op", "1:w", DEVICE, SETTINGS)
    (tmp_path / f"{key}.json").write_text(json.dumps({"key": other, "timing": vars(timing())}))
    assert ReferenceTimingCache(tmp_path).get(key, "w") is None


def test_a_disabled_cache_neither_reads_nor_writes_and_says_why(tmp_path: Path) -> None:
    key = entry_key("op", "0:w", DEVICE, SETTINGS)
    ReferenceTimingCache(tmp_path).put(key, timing())
    off = ReferenceTimingCache(tmp_path / "off", enabled=False, reason="not jailed")
    assert off.get(key, "w") is None
    off.put(key, timing())
    assert not (tmp_path / "off").exists()
    assert off.summary() == {"used": False, "reason": "not jailed", "cached_workloads": []}


def test_only_an_evaluation_whose_workers_are_all_jailed_uses_the_cache() -> None:
    jailed, free = SimpleNamespace(isolation="namespace"), SimpleNamespace(isolation="none (no unshare)")
    assert refcache.jailed([SimpleNamespace(worker=jailed), SimpleNamespace(worker=None)])
    assert not refcache.jailed([SimpleNamespace(worker=jailed), SimpleNamespace(worker=free)])


def _evaluate(out: Path, cache: Path, jail: str = "1") -> dict:
    env = {**os.environ, "AKA_CACHE_DIR": str(cache), "AKA_WORKER_JAIL": jail}
    kernel = REPO_ROOT / "tests/tools/evaluator/harness/candidates/rmsnorm_torch"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "evaluate",
            "--op-dir",
            str(SOL_FIXTURES / "rmsnorm"),
            "--kernel-dir",
            str(kernel),
            "--shape-id",
            BATCH1,
            "--seeds",
            "1",
            "--device",
            "cpu",
            "--out",
            str(out),
        ],
        cwd=HARNESS_PARENT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert out.is_file(), proc.stderr[-2000:]
    return json.loads(out.read_text())


@pytest.mark.slow
def test_the_second_evaluation_takes_the_reference_latency_from_the_cache_and_says_so(tmp_path: Path) -> None:
    from aka_graph.tools.evaluator.harness.isolate import unavailable

    if unavailable() is not None:
        pytest.skip(f"no worker jail here: {unavailable()}")
    first = _evaluate(tmp_path / "a.json", tmp_path / "cache")
    second = _evaluate(tmp_path / "b.json", tmp_path / "cache")
    assert first["status"] == second["status"] == "PASS"
    assert first["reference_timing_cache"]["cached_workloads"] == []
    assert second["reference_timing_cache"] == {
        "used": True,
        "directory": str(tmp_path / "cache" / "reference_timing"),
        "cached_workloads": [BATCH1],
    }
    ref = [w["reference_latency_us"] for w in (first["workloads"][0], second["workloads"][0])]
    assert ref[0] is not None and ref[0] == ref[1]
    assert second["output_transfer"]["shared_region"] and second["output_transfer"]["shared_region_bytes"] > 0
    timeline = second["timeline_s"]
    for point in ("parent.worker_spawn", "worker.torch_imported", "worker.ready", "parent.contract_probed"):
        assert 0 <= timeline[point] <= second["phases_s"]["total"], point


@pytest.mark.slow
def test_an_unjailed_worker_turns_the_cache_off(tmp_path: Path) -> None:
    res = _evaluate(tmp_path / "a.json", tmp_path / "cache", jail="0")
    assert res["status"] == "PASS" and res["reference_timing_cache"]["used"] is False
    assert "jail" in res["reference_timing_cache"]["reason"]
    assert not (tmp_path / "cache" / "reference_timing").exists()


def test_preloading_carried_entries_does_not_import_torch(tmp_path: Path) -> None:
    """The command line preloads before it spawns the workers: importing torch there (~seconds) would
    delay every worker's start-up by as much (seen: workers spawned 7 s late once entries existed)."""
    carried = tmp_path / "refcache.json"
    entry = {"latency_us": 1.0, "spread_pct": 0.0, "samples_us": [1.0], "method": "cuda_graph"}
    carried.write_text(json.dumps({"entries": {"k" * 64: {**entry, "kernels_per_call": None, "notes": []}}}))
    code = (
        "import sys; from harness import refcache; refcache.preload(); "
        "print(len(refcache._CARRIED), 'torch' in sys.modules)"
    )
    env = {**os.environ, refcache.CARRY_VAR: str(carried)}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=HARNESS_PARENT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.stdout.split() == ["2", "False"], proc.stderr[-2000:]  # the entry and the loaded mark


class _Reference:
    """A reference whose timings say where they were measured: the bench's set, or a kernel's own sets."""

    def __init__(self, seed_may_shape: bool = False) -> None:
        self.calls: list[tuple] = []
        self.seed_may_shape = seed_may_shape  # a generator of the operator's own

    def time(self, idx: int, bench_seed: int, l2_bytes: int) -> SimpleNamespace:
        self.calls.append(("bench", idx, bench_seed))
        return SimpleNamespace(where="bench", idx=idx, latency_us=2.0, spread_pct=0.0, samples_us=[2.0],
                               method="host_interpreter", kernels_per_call=None, notes=[])  # fmt: skip

    def time_on_sets(self, idx: int, rounds: list[TS], l2_bytes: int, bench_seed: int) -> SimpleNamespace:
        self.calls.append(("own", idx, tuple(rounds)))
        return SimpleNamespace(where="own", idx=idx, rounds=rounds)


def _seed_shaped_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout_varies: bool
) -> SimpleNamespace:
    monkeypatch.setenv("AKA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(refcache, "jailed", lambda states: True)
    monkeypatch.setattr(refcache, "operator_digest", lambda op_dir: "op")
    monkeypatch.setattr(refcache, "entry_key", lambda *a: "k")
    stored = SimpleNamespace(latency_us=1.0, spread_pct=0.0, samples_us=[1.0], method="host_interpreter",
                             kernels_per_call=None, notes=[])  # fmt: skip
    refcache.ReferenceTimingCache(directory=refcache.cache_dir()).put("k", stored)  # a cached figure waits
    return SimpleNamespace(
        contract={"layout_varies": layout_varies}, indices=[0, 1], workload_id=lambda i: f"w{i}",
        device_info={}, l2_bytes=0, bench_seed=77, op=SimpleNamespace(directory=tmp_path),
        reference=_Reference(),
    )  # fmt: skip


def test_a_seed_shaped_operators_reference_is_timed_on_each_kernels_own_sets_and_never_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _seed_shaped_session(tmp_path, monkeypatch, layout_varies=True)
    a = SimpleNamespace(label="a", worker=None, timed_sets={0: [TS(11, 5), TS(12, 4)], 1: [TS(13, 5)]})
    b = SimpleNamespace(
        label="b", worker=None, timed_sets={0: [TS(21, 3)], 1: [TS(None, 5)]}
    )  # 1: the bench's set
    shared, own, summary = refcache.reference_timings(session, [a, b])
    assert own["a"][0].rounds == [TS(11, 5), TS(12, 4)] and own["a"][1].rounds == [TS(13, 5)]
    assert own["b"][0].rounds == [TS(21, 3)] and 1 not in own["b"]  # b's workload 1 ran on the bench's set
    assert 0 not in shared and shared[1].where == "bench"  # only where some kernel ran on the bench's set
    assert ("bench", 1, 77) in session.reference.calls and summary["cached_workloads"] == []


def test_on_a_gpu_a_seed_shaped_operators_reference_is_timed_on_this_bench_set_not_taken_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _seed_shaped_session(tmp_path, monkeypatch, layout_varies=True)
    gpu_kernel = SimpleNamespace(label="a", worker=None, timed_sets={})  # a GPU's rounds run on fixed buffers
    shared, own, summary = refcache.reference_timings(session, [gpu_kernel])
    assert own == {} and [shared[i].where for i in (0, 1)] == ["bench", "bench"]
    assert summary["cached_workloads"] == []


def test_an_operator_of_fixed_shapes_still_takes_its_reference_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _seed_shaped_session(tmp_path, monkeypatch, layout_varies=False)
    shared, own, summary = refcache.reference_timings(
        session, [SimpleNamespace(label="a", worker=None, timed_sets={})]
    )
    assert shared[0].latency_us == 1.0 and own == {} and session.reference.calls == []
    assert summary["cached_workloads"] == ["w0", "w1"]


def test_a_kernel_whose_rounds_ran_partly_on_the_bench_set_is_given_the_bench_sets_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _seed_shaped_session(tmp_path, monkeypatch, layout_varies=True)
    mixed = SimpleNamespace(label="c", worker=None, timed_sets={0: [TS(31, 5), TS(None, 4)]})
    shared, own, _ = refcache.reference_timings(session, [mixed])
    assert own == {} and shared[0].where == "bench"


def test_a_kernel_whose_own_set_timing_failed_is_given_the_bench_sets_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reference that cannot be timed on a kernel's sets (one of them of other shapes than a graph's
    copies, the device out of memory) leaves that kernel the bench set's figure, never no figure."""
    session = _seed_shaped_session(tmp_path, monkeypatch, layout_varies=True)

    def fails(*args: Any) -> None:
        raise RuntimeError("a set of other shapes")

    session.reference.time_on_sets = fails
    kernel = SimpleNamespace(label="a", worker=None, timed_sets={0: [TS(31, 4, rotated=True)]})
    shared, own, _ = refcache.reference_timings(session, [kernel])
    assert own == {} and shared[0].where == "bench"


@pytest.mark.parametrize(
    ("jailed", "carried", "isolation", "used"),
    [
        (True, None, None, True),  # every worker jailed: the host's cache
        (False, None, "bwrap", False),  # an isolated job without a carried file: nothing to use
        (False, {}, None, False),  # a carried file, but a job the candidate could reach the coordinator from
        (False, {}, "bwrap", True),  # carried into an isolated job
    ],
)
def test_the_cache_is_used_only_where_no_candidate_could_have_written_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    jailed: bool,
    carried: dict | None,
    isolation: str | None,
    used: bool,
) -> None:
    session = _seed_shaped_session(tmp_path, monkeypatch, layout_varies=False)
    monkeypatch.setattr(refcache, "jailed", lambda states: jailed)
    monkeypatch.setattr(refcache, "_carried", lambda: carried)
    monkeypatch.setattr(refcache, "sandbox_isolation", lambda: isolation)
    _, _, summary = refcache.reference_timings(
        session, [SimpleNamespace(label="a", worker=None, timed_sets={})]
    )
    assert summary["used"] is used


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_an_operator_with_its_own_generator_is_timed_on_this_evaluations_sets_and_never_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, device: str
) -> None:
    """Its generator decides per seed what a set holds, at fixed shapes too (a padded batch whose valid
    rows follow the seed), and the bench seed is fresh in every evaluation: a cached figure from a long
    bench set read 5.45x for the reference itself as candidate on a short one (red team round 27, h01).
    On a host the reference runs on each kernel's own timed sets; where a kernel's rounds ran on the
    bench's set (a GPU's graph), on this evaluation's bench set, measured, not read from the cache."""
    session = _seed_shaped_session(tmp_path, monkeypatch, layout_varies=False)
    session.reference = _Reference(seed_may_shape=True)
    kernel = SimpleNamespace(label="a", worker=None, timed_sets={0: [TS(11, 5)]} if device == "cpu" else {})
    shared, own, summary = refcache.reference_timings(session, [kernel])
    if device == "cpu":
        assert own == {"a": {0: SimpleNamespace(where="own", idx=0, rounds=[TS(11, 5)])}}
        assert 0 not in shared and shared[1].where == "bench"  # workload 1: no fresh-set round
    else:
        assert own == {} and [shared[0].where, shared[1].where] == ["bench", "bench"]
    assert summary["cached_workloads"] == []  # the waiting cached figure was never read
    assert refcache.ReferenceTimingCache(directory=refcache.cache_dir()).get("k", "w0") is not None
    assert [c for c in session.reference.calls if c[0] == "bench"] == [
        ("bench", i, 77) for i in ([1] if device == "cpu" else [0, 1])
    ]


def test_random_inputs_of_declared_shapes_keep_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random tensors of declared shapes: every bench set is a draw of one distribution (the rmsnorm
    fixture's references come from the cache in a campaign)."""
    session = _seed_shaped_session(tmp_path, monkeypatch, layout_varies=False)
    kernel = SimpleNamespace(label="a", worker=None, timed_sets={0: [TS(11, 5)]})
    shared, own, summary = refcache.reference_timings(session, [kernel])
    assert own == {} and summary["cached_workloads"] == ["w0", "w1"]
    assert session.reference.calls == [] and shared[0].latency_us == 1.0  # the stored figure
