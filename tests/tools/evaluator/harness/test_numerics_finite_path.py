"""A piece whose elements are all finite is compared without masks (numerics.Tally._add_finite, about half
the passes over a large output): its verdict must be the masked comparison's, rule by rule.

The two paths are held against each other on the same cases: once with one element a plain zero in both
the output and the reference (every element finite: the unmasked path), once with that element NaN in
both (a NaN matched by a NaN is explained, and masked out: the masked path). The masked path gives that
element exactly what a zero in both gives (no difference, within the tolerance, nothing to the scale), so
any difference between the two verdicts is the unmasked path's error."""

from __future__ import annotations

import pytest
import torch

from aka_graph.tools.evaluator.harness import numerics
from aka_graph.tools.evaluator.harness.numerics import Tally, Verdict, check_output
from aka_graph.tools.evaluator.harness.opmodel import Tolerance

LOOSE = Tolerance(atol=1e-3, rtol=1e-3, matched_ratio=0.5)
CAPPED = Tolerance(atol=1e-3, rtol=1e-3, matched_ratio=0.5, error_cap=0.5)


def _cases() -> list[tuple[str, torch.Tensor, torch.Tensor, Tolerance, str]]:
    """(name, got, ref, tolerance, a phrase the verdict's message holds; "" for a pass)."""
    g = torch.Generator().manual_seed(29)
    ref = torch.randn(48, 40, generator=g)
    near = ref + 1e-4 * torch.randn(48, 40, generator=g)
    rows = ref.clone()
    rows[10, :30] += 0.01
    columns = ref.clone()
    columns[:30, 7] += 0.01
    gross = ref.clone()
    gross[3, 3] += 50.0
    scattered = ref + 0.0005 * torch.randn(48, 40, generator=g)  # near misses here and there
    tiny = ref * 1e-14  # relative errors against a reference near zero (the 1e-12 floor)
    wide_ref = 10 * torch.randn(48, 40, generator=g)  # a root mean square of ~10: the near-miss scale
    wide_ref[0, 0] = 0.0
    scaled = wide_ref.clone()
    scaled[0, 0] = 0.112  # a near miss by the output's scale (allowance 0.176), gross by a part's
    zeros = torch.zeros(48, 40)
    at_bound = zeros.clone()
    at_bound[20, 20] = 1.0  # off by exactly the near-miss allowance of 16 x 0.0625: still a near miss
    flat = torch.randn(900, generator=g)
    window = flat.clone()
    window[100:170] += 0.01
    return [
        ("pass", near, ref, Tolerance(), ""),
        ("ratio", ref + 1.0, ref, Tolerance(), "% of elements within"),
        ("rows", rows, ref, LOOSE, "rows are mostly wrong"),
        ("columns", columns, ref, LOOSE, "columns are mostly wrong"),
        ("gross", gross, ref, LOOSE, "y: 1 elements are off by more than 16x their tolerance (worst 50)"),
        ("capped", gross, ref, CAPPED, "exceeds the cap"),
        ("scattered", scattered, ref, LOOSE, ""),
        ("tiny reference", tiny + 1e-16, tiny, Tolerance(atol=0.0, rtol=1e-3), "% of elements within"),
        ("all zeros", zeros, ref, Tolerance(matched_ratio=0.0), "all zeros where the reference is not"),
        ("zeros for ones", zeros, torch.ones(48, 40), Tolerance(matched_ratio=0.0), "all zeros where"),
        ("zeros both", zeros, zeros, Tolerance(), ""),
        ("near miss by the scale", scaled, wide_ref, LOOSE, ""),
        ("at the near-miss bound", at_bound, zeros, Tolerance(atol=0.0625, rtol=0.0, matched_ratio=0.5), ""),
        ("window", window, flat, LOOSE, "consecutive elements are wrong"),
        ("bf16", near.bfloat16(), ref.bfloat16(), Tolerance(), ""),
        ("fp16 gross", gross.half(), ref.half(), LOOSE, "16x their tolerance"),
    ]


def _with(got: torch.Tensor, ref: torch.Tensor, at: int, value: float) -> tuple[torch.Tensor, torch.Tensor]:
    got, ref = got.clone(), ref.clone()
    got.view(-1)[at] = value
    ref.view(-1)[at] = value
    return got, ref


def _fields(v: Verdict) -> tuple[object, ...]:
    return (v.ok, v.max_abs, v.max_rel, v.message, v.numeric, v.matched)


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c[0])
@pytest.mark.parametrize("chunk", [1 << 24, 7, 160])
def test_the_unmasked_path_gives_the_masked_paths_verdict(
    case: tuple[str, torch.Tensor, torch.Tensor, Tolerance, str], chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    _name, got, ref, tol, phrase = case
    monkeypatch.setattr(numerics, "CHUNK_ELEMENTS", chunk)
    at = ref.numel() // 3
    finite = check_output("y", *_with(got, ref, at, 0.0), tol)
    masked = check_output("y", *_with(got, ref, at, float("nan")), tol)
    assert _fields(finite) == _fields(masked)
    assert phrase in finite.message and finite.ok == (phrase == ""), finite.message


def test_a_piece_of_finite_elements_takes_the_unmasked_path_and_one_nan_the_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    taken: list[int] = []
    real = Tally._add_finite

    def spy(self: Tally, a: torch.Tensor, b: torch.Tensor, lo: int) -> None:
        taken.append(lo)
        real(self, a, b, lo)

    monkeypatch.setattr(Tally, "_add_finite", spy)
    monkeypatch.setattr(numerics, "CHUNK_ELEMENTS", 100)
    ref = torch.randn(10, 40)
    got = ref.clone()
    got[5, 0] = float("nan")  # flat 200: in the third piece, rows 4-5 (two 40-element lines a piece)
    verdict = check_output("y", got, ref + 1e-6, Tolerance())
    assert not verdict.ok and "1 NaN" in verdict.message
    assert taken == [0, 80, 240, 320]  # every piece but the one holding the NaN


@pytest.mark.parametrize("chunk", [1 << 24, 7])
def test_zeros_against_a_reference_of_ones_are_all_zeros(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(numerics, "CHUNK_ELEMENTS", chunk)
    verdict = check_output("y", torch.zeros(8, 5), torch.ones(8, 5), Tolerance(matched_ratio=0.0))
    assert verdict.message == "y: all zeros where the reference is not"
