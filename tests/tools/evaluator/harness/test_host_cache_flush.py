"""Host-timed calls start from cold caches, the candidate's in its worker and the reference's in the
parent alike (timing.flush_host_caches). The worker's calls came after ~5 ms of untimed checks per step
and a wake-up on the pipe, the parent's reference calls straight after its own loop: the reference
itself as the candidate read 2.05-2.49 times the reference on a 28 us rmsnorm call (5 runs, round 27,
this 2-core host), 0.75-1.48 times in 10 runs with every call flushed first
(`benchmarks/host_timing_floor.py`)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from aka_graph.tools.evaluator.harness import bench as bench_module
from aka_graph.tools.evaluator.harness import timing, trusted
from aka_graph.tools.evaluator.harness.bench import Bench
from aka_graph.tools.evaluator.harness.hostclock import ANSWER, CALL, FINISH, NOOP, PREPARE, STEP
from aka_graph.tools.evaluator.harness.runner import KernelRunner
from aka_graph.tools.evaluator.harness.timing import TimedSets
from aka_graph.tools.evaluator.harness.worker import Worker
from tests.conftest import SOL_FIXTURES

CPU = torch.device("cpu")
RMSNORM = SOL_FIXTURES / "rmsnorm"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"index0": "48K", "index1": "32K", "index2": "1024K", "index3": "32768K"}, 32 << 20),
        ({"index0": "32K", "index2": "2M"}, 2 << 20),  # no L3: the L2 is the last level
        ({"index0": "garbage", "index3": ""}, 0),
        ({}, 0),  # no sysfs (a container without it)
    ],
    ids=["epyc", "no L3", "unreadable", "none"],
)
def test_the_last_level_cache_is_read_from_sysfs(
    tmp_path: Path, files: dict[str, str], expected: int
) -> None:
    for index, size in files.items():
        (tmp_path / index).mkdir()
        (tmp_path / index / "size").write_text(size + "\n")
    assert timing.last_level_cache_bytes(tmp_path) == expected


@pytest.mark.parametrize(
    ("llc", "flushed"),
    [(0, 8 << 20), (32 << 20, 48 << 20), (1 << 30, 512 << 20)],
    ids=["unknown", "32M", "1G"],
)
def test_a_flush_touches_one_and_a_half_caches_within_bounds(llc: int, flushed: int) -> None:
    assert timing.host_flush_bytes(llc) == flushed


def test_a_flush_reads_and_writes_every_byte_of_its_buffer() -> None:
    timing.flush_host_caches()
    buffer = timing._FLUSH[("cpu", -1)]
    before = buffer.clone()
    timing.flush_host_caches()
    assert buffer.numel() >= timing.HOST_FLUSH_MIN
    assert torch.equal(buffer, before + 1)  # every byte loaded and stored (a fill would skip the loads)


def test_the_references_host_timed_calls_each_follow_a_flush(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    monkeypatch.setattr(bench_module, "flush_host_caches", lambda: events.append("flush"))

    def kernel(x: torch.Tensor) -> torch.Tensor:
        events.append("call")
        return x * 2

    bench = Bench(KernelRunner(kernel, False, [((4, 8), torch.float32)], CPU), [torch.randn(4, 8)], CPU, 0)
    events.clear()
    timing_ = bench.measure()
    timed = [i for i, e in enumerate(events) if e == "call"][-len(timing_.samples_us) :]
    assert timed and all(events[i - 1] == "flush" for i in timed)


def test_the_workers_prepare_step_flushes_after_the_perturbation() -> None:
    """The parent's "prepare" frame: the untimed perturbation, then the flush; "noop" and "call" none."""
    events: list[str] = []
    fake = SimpleNamespace(
        pool=None,
        prepare_timed_call=lambda i: events.append(f"prepare {i}"),
        perturb=lambda i: events.append(f"perturb-only {i}"),
        call=lambda k: events.append(f"call {k}"),
        copies=[[]],
    )
    to_worker, from_parent = os.pipe()
    to_parent, from_worker = os.pipe()
    stub = SimpleNamespace(benches={0: fake}, chan=SimpleNamespace(rfd=to_worker, wfd=from_worker))
    stub.time_end = lambda msg: {"ended": True}
    for op in (PREPARE, NOOP, CALL):
        os.write(from_parent, STEP.pack(op, 0))
    os.write(from_parent, STEP.pack(FINISH, 1))
    assert Worker.steps(stub, {"wl": 0}) == {"ended": True}  # type: ignore[arg-type]
    assert events == ["prepare 0", "call 0"]
    assert len(os.read(to_parent, 3 * ANSWER.size)) == 3 * ANSWER.size
    for fd in (to_worker, from_parent, to_parent, from_worker):
        os.close(fd)


def test_the_reference_on_a_candidates_own_sets_is_timed_after_a_flush_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[str] = []
    monkeypatch.setattr(trusted, "flush_host_caches", lambda: events.append("flush"))
    ref = SimpleNamespace(
        runner=lambda idx: SimpleNamespace(invoke=lambda inputs: events.append("call")),
        inputs=lambda idx, seed, scale: [torch.zeros(2)],
        device=torch.device("cpu"),
    )
    ref._host_round = lambda *a: trusted.Reference._host_round(ref, *a)  # type: ignore[attr-defined]
    trusted.Reference.time_on_sets(ref, 0, [TimedSets(5, 3)], 0, None)  # type: ignore[arg-type]
    assert events == ["call", "flush", "call", "flush", "call", "flush", "call"]  # an untimed first call


# --- glibc's malloc keeps what a call frees, in both processes --------------------------------------------


class _Libc:
    def __init__(self, answers: dict[int, int] | None = None, has_mallopt: bool = True) -> None:
        self.calls: list[tuple[int, int]] = []
        self.answers = answers or {}
        if has_mallopt:
            self.mallopt = self._mallopt

    def _mallopt(self, param: int, value: int) -> int:
        self.calls.append((param, value))
        return self.answers.get(param, 1)


def test_the_host_allocator_keeps_blocks_up_to_glibcs_ceiling_and_its_heap_top(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    libc = _Libc()
    monkeypatch.setattr(timing.ctypes, "CDLL", lambda name: libc)
    assert timing.steady_host_allocator()
    assert libc.calls == [(timing.M_MMAP_THRESHOLD, 32 << 20), (timing.M_TRIM_THRESHOLD, 256 << 20)]


@pytest.mark.parametrize(
    "libc", [None, _Libc(has_mallopt=False), _Libc({-3: 0})], ids=["no libc", "musl", "refused"]
)
def test_a_host_without_those_settings_says_so_and_goes_on(
    monkeypatch: pytest.MonkeyPatch, libc: object
) -> None:
    def load(name: str) -> object:
        if libc is None:
            raise OSError(name)
        return libc

    monkeypatch.setattr(timing.ctypes, "CDLL", load)
    assert timing.steady_host_allocator() is False


def test_a_real_glibc_takes_the_settings() -> None:
    assert timing.steady_host_allocator()  # this host's glibc (the CI image's too)


def test_the_worker_and_the_parent_both_settle_their_allocator_on_a_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from aka_graph.tools.evaluator.harness import session as session_module
    from aka_graph.tools.evaluator.harness import worker as worker_module

    settled: list[str] = []
    monkeypatch.setattr(worker_module, "steady_host_allocator", lambda: settled.append("worker"))
    monkeypatch.setattr(worker_module, "start_intra_op_pool", lambda: None)
    worker_module.prepare_host_process()
    monkeypatch.setattr(session_module, "steady_host_allocator", lambda: settled.append("parent"))
    session_module.Session(session_module.Settings(op_dir=RMSNORM, device="cpu"))
    assert settled == ["worker", "parent"]
