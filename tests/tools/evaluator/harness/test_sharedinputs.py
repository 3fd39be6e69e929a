"""The correctness inputs the trusted parent owns (sharedinputs.py): the worker sees exactly the layouts
the parent drew, its writes reach the parent's files, and the parent reads them back through descriptors
of its own, which neither a truncated nor a replaced file can fool."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from aka_graph.tools.evaluator.harness.runner import digest
from aka_graph.tools.evaluator.harness.sharedinputs import Placed, open_inputs


def _inputs() -> list[object]:
    g = torch.Generator().manual_seed(0)
    base = torch.randn(8, 6, generator=g)
    return [
        base.t(),  # transposed: strides (1, 6)
        torch.randn(1, 5, generator=g).expand(4, 5),  # expanded: stride 0
        torch.randn(20, generator=g)[3:11],  # a view at an offset
        torch.randn(3, 4, generator=g).to(torch.float8_e4m3fn),
        torch.empty(0, 7),
        1e-5,  # a Python scalar travels as it is
    ]


def test_the_worker_sees_the_parents_inputs_with_their_exact_layout(tmp_path: Path) -> None:
    values = _inputs()
    placed = Placed(values, tmp_path, "s0")
    seen = open_inputs(placed.descs)
    for want, got in zip(values, seen, strict=True):
        if isinstance(want, torch.Tensor):
            assert (got.dtype, got.shape, got.stride(), got.storage_offset()) == (
                want.dtype, want.shape, want.stride(), want.storage_offset())
            assert torch.equal(got.view(torch.uint8) if got.dtype == torch.float8_e4m3fn else got,
                               want.view(torch.uint8) if want.dtype == torch.float8_e4m3fn else want)
        else:
            assert got == want
    assert digest(placed.read_back() or []) == digest(values)
    placed.close()


def test_a_write_into_an_input_reaches_the_parents_fingerprint(tmp_path: Path) -> None:
    values = _inputs()
    placed = Placed(values, tmp_path, "s0")
    seen = open_inputs(placed.descs)
    seen[2][0] += 1.0  # what a kernel scribbling on its input does
    after = digest(placed.read_back() or [])
    assert after[2] != digest(values)[2]
    assert [a for i, a in enumerate(after) if i != 2] == [d for i, d in enumerate(digest(values)) if i != 2]
    placed.close()


def test_a_truncated_input_file_reads_short(tmp_path: Path) -> None:
    placed = Placed(_inputs(), tmp_path, "s0")
    os.truncate(placed.descs[0]["file"], 8)
    assert placed.read_back() is None
    placed.close()


def test_a_replaced_input_file_does_not_fool_the_parent(tmp_path: Path) -> None:
    """The parent reads through the descriptor it opened: a new file under the same name is not it."""
    values = _inputs()
    placed = Placed(values, tmp_path, "s0")
    seen = open_inputs(placed.descs)
    seen[0].zero_()
    path = Path(placed.descs[0]["file"])
    original = bytes(torch.empty(0, dtype=torch.uint8).set_(values[0].untyped_storage()).numpy())
    path.unlink()
    path.write_bytes(original)  # pristine bytes under the old name
    assert digest(placed.read_back() or [])[0] != digest(values)[0]
    placed.close()
    assert not any(tmp_path.iterdir())
