"""The parent's expected outputs wait in host memory while the worker times, where they are large
(memory.kept_aside), and are judged against the worker's outputs on the device a piece at a time
(numerics.compute_device). 025 MoE backward's 24 GiB of expected gradients, held on the H200 beside a
worker drawing its 24 GiB re-validation set next to its 88 GiB bench, ran the worker out of memory (rounds
25-26); brought back whole, 8 GiB at a time, they ran the parent out next. What is kept must be what was
put aside, an expanded output still expanded, and judged as it would have been on the device."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from aka_graph.tools.evaluator.harness import memory
from aka_graph.tools.evaluator.harness.memory import kept_aside
from aka_graph.tools.evaluator.harness.numerics import compute_device

CPU = torch.device("cpu")


def test_on_a_host_the_values_stay_as_they_are() -> None:
    values = [torch.zeros(1 << 20)]
    assert kept_aside(values, CPU) is values


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """A device that says it is a GPU (only its kind is read), a 2 KiB limit, and the releases made."""
    released: list[bool] = []
    monkeypatch.setattr(memory, "HOST_KEPT_BYTES", 2 << 10)
    monkeypatch.setattr(memory, "release", lambda device, force=False, **_: released.append(force))
    return released


@pytest.mark.parametrize(("nbytes", "aside"), [(4 << 10, True), (1 << 10, False)])
def test_on_a_gpu_values_above_the_limit_go_to_host_memory_and_the_cache_is_handed_back(
    fake_gpu: list[bool], nbytes: int, aside: bool
) -> None:
    values = [torch.ones(nbytes // 4), 3]
    want = values[0].clone()
    out = kept_aside(values, SimpleNamespace(type="cuda"))  # type: ignore[arg-type]
    if aside:
        assert out is not values and values == []  # the caller's list lets go of the device tensors
        assert torch.equal(out[0], want) and out[1] == 3 and fake_gpu == [True]
    else:
        assert out is values and fake_gpu == []


def test_an_expanded_output_is_kept_by_its_base_and_stays_expanded(fake_gpu: list[bool]) -> None:
    base = torch.randn(1, 8)
    wide = base.expand(1 << 16, 8)  # 2 MiB as a view of 32 bytes
    (kept,) = kept_aside([wide], SimpleNamespace(type="cuda"))  # type: ignore[arg-type]
    assert kept.shape == wide.shape and kept.stride(0) == 0 and torch.equal(kept, wide)
    assert kept.untyped_storage().nbytes() == 32  # never materialized in host memory


@pytest.mark.parametrize(
    ("got", "ref", "where"),
    [
        ("cpu", "cpu", "cpu"),
        ("meta", "meta", "meta"),
        ("cpu", "meta", "meta"),  # an output sent through the pipe: compared where the reference is
        ("meta", "cpu", "meta"),  # the reference kept aside in host memory: compared where the output is
    ],
)
def test_outputs_are_compared_on_the_device_unless_both_are_in_host_memory(
    got: str, ref: str, where: str
) -> None:
    assert compute_device(torch.empty(2, device=got), torch.empty(2, device=ref)).type == where
