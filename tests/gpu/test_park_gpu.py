"""The worker's `park` request (before the parent computes a re-validation reference) hands cached device
memory back only where it is large (memory.release_cached, 1 GiB) and the device is short of it
(memory.cache_is_modest: cached beyond an eighth of what is free): each hand-back is a full collection of
~0.1 s, and one per workload was 1.5 s of a 16-workload problem's 8 s on the H200 (round 20).

Run: python3 -m pytest -m gpu tests/gpu/test_park_gpu.py (skipped without CUDA)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from aka_graph.tools.evaluator.harness import memory
from aka_graph.tools.evaluator.harness.worker import Worker

pytestmark = pytest.mark.gpu
GIB = 1 << 30


def _park(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Worker.park on a worker holding no bench; the releases it made (their count)."""
    made: list[int] = []
    real = memory.release

    def spy(device: torch.device, *args: object, **kwargs: object) -> None:
        made.append(1)
        real(device, *args, **kwargs)

    monkeypatch.setattr(memory, "release", spy)
    reply = Worker.park(SimpleNamespace(benches={}, device=torch.device("cuda")), {})  # type: ignore[arg-type]
    assert "error" not in reply, reply
    return made


def test_little_cached_memory_is_left_and_much_is_handed_back(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.cuda.empty_cache()
    small = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    del small  # 64 MiB cached: not worth a collection
    assert _park(monkeypatch) == []
    modest = torch.empty(2 * GIB, dtype=torch.uint8, device="cuda")
    del modest  # 2 GiB cached beside ~135 GiB free: kept, the other process has plenty
    before = torch.cuda.memory_reserved()
    assert _park(monkeypatch) == [1]  # (release was asked, and declined)
    assert torch.cuda.memory_reserved() == before
    free, _ = torch.cuda.mem_get_info()
    large = torch.empty(int(free * 0.3), dtype=torch.uint8, device="cuda")
    del large  # cached: 0.3 of what was free, beside 0.7 free: the other process may need it
    before = torch.cuda.memory_reserved()
    assert _park(monkeypatch) == [1]
    assert torch.cuda.memory_reserved() <= before - int(free * 0.3) + (64 << 20)


def _big_temporaries_bench(seed: int) -> object:
    """A bench of a value-returning call (as a reference given as the candidate) whose temporaries take
    8 GiB: captured into a CUDA graph, its pool holds them."""
    from aka_graph.tools.evaluator.harness.bench import Bench
    from aka_graph.tools.evaluator.harness.runner import KernelRunner

    def kernel(x: torch.Tensor) -> torch.Tensor:
        scratch = x.repeat(2 * GIB // x.numel())  # 8 GiB of float32, freed as the call returns
        return scratch.view(-1, x.numel()).sum(0)

    def draw() -> list[torch.Tensor]:
        return [torch.randn(1024, device="cuda", generator=torch.Generator("cuda").manual_seed(seed))]

    runner = KernelRunner(kernel, False, [((1024,), torch.float32)], torch.device("cuda"))
    return Bench(runner, draw(), torch.device("cuda"), 50 << 20, regenerate=draw)


def test_a_graphs_pool_is_counted_in_its_bench_and_parking_the_bench_frees_it() -> None:
    """Round 22 (055 audio encoder): a new workload's first call ran out of memory beside 57 GiB of graph
    pools. A bench's count of its own memory includes its graph's pool, and parking it hands the pool back
    (nothing else holds the captured calls' outputs)."""
    from aka_graph.tools.evaluator.harness.worker import graph_pool_bytes

    torch.cuda.empty_cache()
    before = graph_pool_bytes(torch.device("cuda"))
    bench = _big_temporaries_bench(1)
    timing = bench.measure()  # type: ignore[attr-defined]
    assert timing.method == "cuda_graph", timing.notes
    assert bench.graph.pool_bytes >= 8 * GIB  # type: ignore[attr-defined]
    assert bench.resident_bytes >= 8 * GIB  # type: ignore[attr-defined]
    held = graph_pool_bytes(torch.device("cuda")) - before
    assert held >= 8 * GIB
    bench.park()  # type: ignore[attr-defined]
    assert graph_pool_bytes(torch.device("cuda")) - before < 1 * GIB
    torch.cuda.empty_cache()
