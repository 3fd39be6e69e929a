"""An output bit for bit equal to the reference passes at one pass of equality (numerics.same_bits), and its
verdict is the one the full comparison gives; any difference, however small or wherever it lies, goes the
full way. Why: masks, indices and untouched in-place buffers of honest kernels are exact, and judging a
1 GiB boolean mask the full way took 11 s of a 31 s evaluation on the H200 (round 20)."""

from __future__ import annotations

import pytest
import torch

from aka_graph.tools.evaluator.harness import numerics
from aka_graph.tools.evaluator.harness.numerics import check_output, same_bits
from aka_graph.tools.evaluator.harness.opmodel import Tolerance


def _identical_cases() -> list[tuple[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(48, 33, generator=g)
    special = x.clone()
    special[0, :3] = torch.tensor([float("nan"), float("inf"), float("-inf")])
    return [
        ("float32", x),
        ("bf16", x.bfloat16()),
        ("fp8", x.to(torch.float8_e4m3fn)),
        ("nan and inf alike", special),
        ("bool mask", x > 0),
        ("int64 indices", torch.randint(0, 1 << 40, (48, 33), generator=g)),
        ("complex64", torch.complex(x, -x)),
        ("all zeros", torch.zeros(48, 33)),
        ("transposed", x.t()),
        ("expanded", torch.randn(1, 33, generator=g).expand(48, 33)),
        ("0-dim", torch.tensor(2.5)),
    ]


@pytest.mark.parametrize(("name", "ref"), _identical_cases(), ids=[c[0] for c in _identical_cases()])
@pytest.mark.parametrize("chunk", [numerics.CHUNK_ELEMENTS, 7])
def test_an_identical_output_passes_with_the_full_comparisons_verdict(
    name: str, ref: torch.Tensor, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    tol = Tolerance(allow_negative_inf=True)
    monkeypatch.setattr(numerics, "CHUNK_ELEMENTS", chunk)
    got = ref.clone()  # the same values in the same layout (an expanded one comes back compact)
    with monkeypatch.context() as without:
        without.setattr(numerics, "same_bits", lambda a, b, on=None: False)
        full = check_output("out", got, ref, tol)
    # equality in one piece, or in many where both are compact: else the full way
    assert same_bits(got, ref) is (ref.numel() <= chunk or (ref.is_contiguous() and got.is_contiguous()))
    fast = check_output("out", got, ref, tol)
    assert fast.ok and full.ok, (fast.message, full.message)
    assert (fast.max_abs, fast.max_rel, fast.matched, fast.message) == (0.0, 0.0, 1.0, "")
    assert (full.max_abs, full.max_rel, full.matched) == (0.0, 0.0, 1.0)


@pytest.mark.parametrize("where", [0, 100, 1999])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.bool, torch.int32])
def test_a_single_differing_element_anywhere_is_not_the_same_bits(
    where: int, dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With pieces of 7 elements the difference sits in the first, a middle or the last piece."""
    monkeypatch.setattr(numerics, "CHUNK_ELEMENTS", 7)
    ref = (torch.arange(2000) % 5).to(dtype)
    got = ref.clone()
    got[where] = not bool(ref[where]) if dtype == torch.bool else ref[where] + 1
    assert not same_bits(got, ref)


def test_signed_zeros_and_nan_payloads_differ_in_bits_and_are_judged_the_full_way() -> None:
    ref = torch.tensor([0.0, 1.0, float("nan")])
    got = torch.tensor([-0.0, 1.0, float("nan")])
    assert not same_bits(got, ref)
    assert check_output("out", got, ref, Tolerance()).ok  # -0.0 is within any tolerance of 0.0
    other_nan = ref.clone()
    other_nan.view(torch.int32)[2] = 0x7FC00001  # a NaN of another payload
    assert not same_bits(other_nan, ref)
    assert check_output("out", other_nan, ref, Tolerance()).ok  # a NaN where the reference has one


def test_a_near_output_is_not_the_same_bits_and_keeps_its_errors() -> None:
    ref = torch.randn(64, 40)
    got = ref + 1e-6
    assert not same_bits(got, ref)
    verdict = check_output("out", got, ref, Tolerance())
    assert verdict.ok and verdict.max_abs > 0
