"""A capture the driver invalidated never ends, and torch's CUDAGraph then never releases its private
pool: every temporary the captured calls allocated stays for the life of the worker (round 19 on the
H200: an uncapturable MoE layer's worker grew by its temporaries on each workload, 73 to 111 GiB, until
the parent's reference had no room). timing.release_failed_capture hands such a pool back, and leaves
alone a graph whose capture ended (its own destructor releases that pool; a second release would fail
inside it). torch's allocator entry points are recorded here: this host has no GPU."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from aka_graph.tools.evaluator.harness import timing


class Graph:
    def __init__(self, ended: bool) -> None:
        self.ended = ended

    def pool(self) -> tuple[int, int]:
        if not self.ended:
            raise RuntimeError("Called CUDAGraph::pool() without a preceding successful capture.")
        return (0, 7)


@pytest.fixture
def allocator(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    calls: list[tuple[str, Any]] = []
    for name in ("_cuda_endAllocateToPool", "_cuda_releasePool"):
        monkeypatch.setattr(
            torch._C, name, lambda *args, name=name: calls.append((name, args)), raising=False
        )
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: calls.append(("synchronize", a)))
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: calls.append(("empty_cache", ())))
    return calls


def test_a_failed_captures_pool_is_ended_released_and_emptied(allocator) -> None:
    timing.release_failed_capture(Graph(ended=False), (0, 42))
    assert allocator == [
        ("_cuda_endAllocateToPool", (0, (0, 42))),
        ("_cuda_releasePool", (0, (0, 42))),
        ("synchronize", ()),
        ("empty_cache", ()),
    ]


def test_a_capture_that_ended_is_left_to_its_graph(allocator) -> None:
    timing.release_failed_capture(Graph(ended=True), (0, 42))
    assert allocator == []


def test_an_allocator_that_refuses_is_not_the_kernels_failure(monkeypatch, allocator) -> None:
    def refuse(*args: Any) -> None:
        raise RuntimeError("INTERNAL ASSERT FAILED: pool not found")

    monkeypatch.setattr(torch._C, "_cuda_releasePool", refuse, raising=False)
    timing.release_failed_capture(Graph(ended=False), (0, 42))  # the capture's own error is what is reported
    assert ("_cuda_endAllocateToPool", (0, (0, 42))) in allocator
