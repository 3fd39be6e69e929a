"""Near-ties in a gathered float output (found by CI at the end of round 12, open): an operator whose
float output is selected by an argmin (a VQ codebook lookup; likewise MoE routing, nearest neighbours,
top-k) has no right answer where two candidates tie, and an honest kernel may break the tie the other way
(or round its distances differently, as the demo's fast kernel does with |c|^2 - 2 x.c). One row of
thousands then differs by a whole code. The matched ratio (99 %) holds, but numerics.gross_miss ("only
near misses") and structural_omission ("rows mostly wrong") call it INCORRECT; SOL would pass it.

Here the tie is planted exactly (tests/fixtures/sol/near_tie_vq: a token halfway between two codes), so
the false alarm is deterministic: strict xfail until the comparison can tell an ill-conditioned element
(proposed: re-run the reference on slightly perturbed inputs and forgive only the elements where the
kernel matches one of them). The control beside it must stay INCORRECT whatever that fix is: a kernel that
drops its last row (an edge bug a few-rows allowance would forgive) is wrong where the reference is
well-conditioned."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.evaluator.harness.test_adversarial import CANDIDATES
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate, reference_candidate

TIE = FIXTURES / "near_tie_vq"
DROPS_LAST_ROW = '''
import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(x, codebook):
    dist = (x[:, None, :] - codebook[None, :, :]).pow(2).sum(dim=-1)
    out = codebook[dist.argmin(dim=-1)]
    out[-1] = 0.0  # an edge bug: the last row never written
    return out
'''


@pytest.mark.slow
def test_the_planted_tie_operator_passes_with_its_own_reference(tmp_path: Path) -> None:
    code, res = evaluate(tmp_path, TIE, reference_candidate(TIE))
    assert code == 0 and res["status"] == "PASS", res["message"]


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="open: a tie broken the other way is one whole row off, which gross_miss/structural_omission "
    "call INCORRECT (see the module docstring)",
)
def test_an_honest_kernel_breaking_a_tie_the_other_way_passes(tmp_path: Path) -> None:
    source = (CANDIDATES / "honest12r_vq_ties_to_the_last" / "kernel.py").read_text()
    _, res = evaluate(tmp_path, TIE, source)
    assert res["status"] == "PASS", res["message"]


@pytest.mark.slow
def test_a_kernel_dropping_its_last_row_stays_incorrect(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, TIE, DROPS_LAST_ROW)
    assert res["status"] == "INCORRECT", res["message"]
