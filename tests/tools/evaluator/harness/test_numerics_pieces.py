"""A large output is compared in pieces (numerics.Tally): the verdict must be the whole output's, rule by
rule, wherever the pieces cut it: through a window of misses, through a line longer than a piece, across
the columns that only the whole shows mostly wrong. Each case is judged with the usual chunk (one piece:
the whole) and with chunks of a few elements (many pieces), and the two verdicts must agree."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from aka_graph.tools.evaluator.harness import numerics
from aka_graph.tools.evaluator.harness.numerics import check_output
from aka_graph.tools.evaluator.harness.opmodel import Tolerance

LOOSE = Tolerance(atol=1e-3, rtol=1e-3, matched_ratio=0.5)


def _cases() -> list[tuple[str, torch.Tensor, torch.Tensor, Tolerance, str]]:
    """(name, got, ref, tolerance, a phrase the verdict's message holds; "" for a pass)."""
    g = torch.Generator().manual_seed(7)
    ref = torch.randn(64, 40, generator=g)
    near = ref + 1e-4 * torch.randn(64, 40, generator=g)
    rows = ref.clone()
    rows[10, :30] += 0.01  # one row mostly wrong (near misses: only its structure gives it away)
    columns = ref.clone()
    columns[:40, 7] += 0.01  # one column mostly wrong across lines that land in different pieces
    flat = torch.randn(1000, generator=g)
    window = flat.clone()
    window[100:170] += 0.01  # 70 consecutive misses, cut by every piece boundary below
    gross = ref.clone()
    gross[3, 3] += 50.0  # one element far beyond a near miss: the scale is the whole output's
    wide = torch.randn(20, 300, generator=g)  # lines longer than the small chunk: cut inside a line
    wide_row = wide.clone()
    wide_row[5, :200] += 0.01
    nonfinite = ref.clone()
    nonfinite[60, 39] = float("nan")
    ints = torch.randint(0, 50, (64, 40), generator=g, dtype=torch.int32)
    flipped = ints.clone()
    flipped[::9, 0] += 1
    neg = torch.where(ref > 1.5, torch.tensor(float("-inf")), ref)
    return [
        ("pass", near, ref, Tolerance(), ""),
        ("ratio", ref + 1.0, ref, Tolerance(), "% of elements within"),
        ("rows", rows, ref, LOOSE, "rows are mostly wrong"),
        ("columns", columns, ref, LOOSE, "columns are mostly wrong"),
        ("window", window, flat, LOOSE, "consecutive elements are wrong"),
        ("gross", gross, ref, LOOSE, "16x their tolerance"),
        ("line cut into pieces", wide_row, wide, LOOSE, "rows are mostly wrong"),
        ("non-finite", nonfinite, ref, Tolerance(), "non-finite values (1 NaN)"),
        ("all zeros", torch.zeros_like(ref), ref, Tolerance(matched_ratio=0.0), "all zeros"),
        ("discrete", flipped, ints, Tolerance(atol=0, rtol=0, matched_ratio=0.9), ""),
        ("-inf allowed", neg, neg, Tolerance(allow_negative_inf=True), ""),
        ("complex", torch.complex(near, ref), torch.complex(ref, ref), Tolerance(), ""),
        ("bf16", near.bfloat16(), ref.bfloat16(), Tolerance(), ""),
    ]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c[0])
@pytest.mark.parametrize("chunk", [1, 7, 128, 300])
def test_a_verdict_in_pieces_is_the_whole_outputs(
    case: tuple[str, torch.Tensor, torch.Tensor, Tolerance, str], chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    _name, got, ref, tol, phrase = case
    whole = check_output("y", got, ref, tol)
    monkeypatch.setattr(numerics, "CHUNK_ELEMENTS", chunk)
    pieces = check_output("y", got, ref, tol)
    assert (whole.ok, whole.message) == (pieces.ok, pieces.message)
    assert phrase in whole.message and (whole.ok == (phrase == ""))
    assert whole.matched == pieces.matched
    if whole.max_abs is not None:
        assert pieces.max_abs == pytest.approx(whole.max_abs) and pieces.max_rel == pytest.approx(
            whole.max_rel
        )


def test_pieces_cover_the_output_once_along_its_lines() -> None:
    t = torch.empty(5, 12)
    assert numerics._pieces(t, chunk=30) == [(0, 24), (24, 48), (48, 60)]  # two whole lines a piece
    assert numerics._pieces(t, chunk=5) == [
        (r + c, min(r + 12, r + c + 5)) for r in range(0, 60, 12) for c in (0, 5, 10)
    ]
    assert numerics._pieces(torch.empty(10), chunk=4) == [(0, 4), (4, 8), (8, 10)]


PEAK_SCRIPT = """
import resource, sys, torch
from aka_graph.tools.evaluator.harness import numerics
from aka_graph.tools.evaluator.harness.opmodel import Tolerance
ref = torch.randn(1 << 15, 4096).bfloat16()  # 128 M elements: 512 MiB of float32 per temporary if whole
got = ref.clone()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert numerics.check_output("y", got, ref, Tolerance()).ok
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
"""


def test_a_large_outputs_comparison_keeps_its_temporaries_to_a_few_pieces() -> None:
    """What the pieces are for (round 18: a 9.7 GiB bf16 output's float32 copies ran the H200 out of
    memory beside the worker): the comparison's peak is a few pieces' float32, not several outputs'
    (whole, this one took 3 GiB)."""
    out = subprocess.run([sys.executable, "-c", PEAK_SCRIPT], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    grown = int(out.stdout.split()[-1])
    assert grown < 10 * 4 * numerics.CHUNK_ELEMENTS, f"the comparison's peak grew by {grown >> 20} MiB"
