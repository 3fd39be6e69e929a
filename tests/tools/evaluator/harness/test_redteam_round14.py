"""Round fourteen of the red team (candidates/redteam14_*, honest14_*): the near-tie rule's newest part,
numerics.jumped_lines (a line whose chosen nudged reference jumped by more than a near miss accepted near
misses of it everywhere), and the line structure it works on. Findings against 0e2104b:

- J1 (open) redteam14_moe_fp8_on_flipped_rows (fixture near_tie_moe_bf16): on every token whose 2nd and
  3rd bf16 logits tie, the other expert than torch.topk's, and those tokens' GEMMs on fp8 e4m3 operands
  (up to ~10 % of the output scale off). The nudged reference that flips the tie jumps, so the row needs
  only near misses (16 tolerances) of it: PASS in 3 of 5 evaluations. Two fixes were tried and undone:
  holding a flipped line to its tolerance made the honest MoE kernel INCORRECT in 1 evaluation of 6 (the
  seed at twice the scale: the one-unit logit nudge that flips a tie shifts the row's gate by up to ~7
  tolerances, other rows' by up to 22); allowing it the nudge's largest drift on the lines it did not
  flip still passed the fp8 rows in process (2-10 tolerances off: inside that drift). What would tell
  them apart is the shape of the error, not its size: an honest flipped row differs from the nudged one
  by the gate shift times a fixed vector (two nudged references with the same flip span it), fp8 noise
  does not.
- J2 redteam14_score_bf16_after_one_flip (fixture rt14_top1_score_planted_tie, fp32, tolerance 1e-3): a
  top-1 routed score per token, [T] (1-D), computed on bf16 operands (~9 % of scores beyond tolerance)
  plus one deliberate flip of the one tied token. A 1-D output's view was ONE line: one explained flip made
  the whole output "jumped", and every element could be off by 16 tolerances. Fixed: the output has a
  line per token (neartie.line_width), so the flip forgives its own token alone.
- H1 (false alarm) honest14_argmax_ties_to_the_last (fixture rt14_greedy_argmax_bf16): greedy arg-max over
  bf16 logits [256, 8192] -> [256] int64, ties broken toward the last index. ~5 % of rows tie; all 256
  tokens were one line, so one nudged reference had to flip every tie the kernel broke the other way at
  once: never found, INCORRECT. Fixed: a 1-D output of one element per row of a 2-D input has a line per
  element (neartie.line_width).

Held ground (INCORRECT): fp8 on the tie rows routed as the reference (no line jumps); the bf16 score with
the tie broken as the reference does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from aka_graph.tools.evaluator.harness.neartie import line_width
from aka_graph.tools.evaluator.harness.numerics import check_output
from aka_graph.tools.evaluator.harness.opmodel import Tolerance
from tests.tools.evaluator.harness.near_tie_support import (
    candidate_source,
    custom_inputs,
    moe_inputs,
    near_tie_search,
    reference_module,
    run_source,
)
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate, reference_candidate

MOE = FIXTURES / "near_tie_moe_bf16"
SCORE = FIXTURES / "rt14_top1_score_planted_tie"
ARGMAX = FIXTURES / "rt14_greedy_argmax_bf16"
SCORE_TOL = Tolerance(atol=1e-3, rtol=1e-3)


def _score_search(got: torch.Tensor, inputs: list[torch.Tensor]) -> Any:
    """near_tie_search under the fixture's tolerance 1e-3 (the nudge stays 2**-16: rtol / 8 is larger),
    with the session's lines (neartie.line_width)."""
    ref = reference_module(SCORE)["run"]
    return near_tie_search(
        ref, got, inputs, directions=32, tol=SCORE_TOL, width=line_width(ref(*inputs), inputs)
    )


# --- J1: fp8 values on the rows whose tie the kernel flipped ------------------------------------------


def test_fp8_on_flipped_rows_fails_without_nudged_references() -> None:
    inputs = moe_inputs()
    want = reference_module(MOE)["run"](*inputs)
    got = run_source(candidate_source("redteam14_moe_fp8_on_flipped_rows"))["run"](*inputs)
    verdict = check_output("out", got, want, Tolerance())
    assert not verdict.ok and verdict.numeric and verdict.matched >= 0.5, verdict.message


@pytest.mark.xfail(
    strict=True,
    reason="J1: a row whose nudged reference jumped accepts 16-tolerance near misses everywhere "
    "(numerics.jumped_lines): fp8 values on every flipped row pass",
)
def test_fp8_on_flipped_rows_stays_incorrect_with_nudged_references() -> None:
    inputs = moe_inputs()
    got = run_source(candidate_source("redteam14_moe_fp8_on_flipped_rows"))["run"](*inputs)
    verdict = near_tie_search(reference_module(MOE)["run"], got, inputs)
    assert not verdict.ok, verdict.message


@pytest.mark.slow
def test_fp8_on_tie_rows_routed_as_the_reference_stays_incorrect() -> None:
    """Held ground: the same fp8 rows without the flip. No nudged line beats the reference's there (a
    flipped candidate is a whole expert away), so no line jumps and the fp8 rows stay wrong."""
    inputs = moe_inputs()
    hidden, logits, expert_w = inputs
    top = logits.float().topk(3, dim=-1)
    ties = top.values[:, 1] == top.values[:, 2]
    gate = torch.softmax(top.values[:, :2], dim=-1)
    x, w = hidden.float(), expert_w.float()
    x8, w8 = x.to(torch.float8_e4m3fn).float(), w.to(torch.float8_e4m3fn).float()
    out = torch.zeros(hidden.shape)
    for k in range(2):
        exact = torch.bmm(x[:, None], w[top.indices[:, k]]).squeeze(1)
        cheap = torch.bmm(x8[:, None], w8[top.indices[:, k]]).squeeze(1)
        out += gate[:, k : k + 1] * torch.where(ties[:, None], cheap, exact)
    verdict = near_tie_search(reference_module(MOE)["run"], out.bfloat16(), inputs, directions=16)
    assert not verdict.ok, verdict.message


@pytest.mark.slow
@pytest.mark.xfail(
    strict=False,  # measured PASS in 3 of 5 evaluations (the other two: one flipped row left unexplained)
    reason="J1: fp8 values on the rows whose tie the kernel flipped PASS through jumped_lines (most runs)",
)
def test_fp8_on_flipped_rows_is_incorrect(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, MOE, candidate_source("redteam14_moe_fp8_on_flipped_rows"))
    assert res["status"] == "INCORRECT", res["message"]


# --- J2: one flipped tie in a 1-D output forgave the whole output 16 tolerances -----------------------


def test_bf16_score_with_one_flip_fails_the_search_in_process() -> None:
    """J2 in process: the flipped token is explained on its own line (jumped: forgiven near misses there
    alone), and the other tokens' bf16 errors stay errors."""
    inputs = custom_inputs(SCORE)
    want = reference_module(SCORE)["run"](*inputs)
    got = run_source(candidate_source("redteam14_score_bf16_after_one_flip"))["run"](*inputs)
    alone = check_output("score", got, want, SCORE_TOL)
    assert not alone.ok and alone.matched < 0.95, alone.message  # bf16 alone is far from passing
    verdict = _score_search(got, inputs)
    assert not verdict.ok and 0 < verdict.near_ties < 4, verdict.message


@pytest.mark.slow
def test_bf16_score_with_one_flipped_tie_is_incorrect(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, SCORE, candidate_source("redteam14_score_bf16_after_one_flip"))
    assert res["status"] == "INCORRECT", res["message"]


@pytest.mark.slow
def test_bf16_score_breaking_the_tie_as_the_reference_is_incorrect(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, SCORE, candidate_source("redteam14_score_bf16_no_flip"))
    assert res["status"] == "INCORRECT", res["message"]


# --- H1: ties of a 1-D output broken the other way ----------------------------------------------------


def test_the_same_argmax_ties_one_row_each_are_forgiven() -> None:
    """H1's mechanism: as one line the honest kernel's ties stay unexplained; a line per token (as
    neartie.line_width gives a [B] output of a [B, V] input, here as [B, 1]) passes the search."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(256, 8192, generator=g).bfloat16()
    ref = reference_module(ARGMAX)["run"]
    got = run_source(candidate_source("honest14_argmax_ties_to_the_last"))["run"](logits)
    assert int((got != ref(logits)).sum()) >= 3  # the ties are there
    assert not near_tie_search(ref, got, [logits], directions=8).ok  # one line: unexplained
    verdict = near_tie_search(lambda x: ref(x)[:, None], got[:, None], [logits])
    assert verdict.ok and verdict.near_ties > 0, verdict.message


@pytest.mark.slow
def test_argmax_ties_broken_toward_the_last_index_pass(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, ARGMAX, candidate_source("honest14_argmax_ties_to_the_last"))
    assert res["status"] == "PASS", res["message"]


# --- honest controls ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_planted_tie_broken_the_other_way_in_fp32_passes(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, SCORE, candidate_source("honest14_score_ties_to_the_other"))
    assert res["status"] == "PASS", res["message"]


@pytest.mark.slow
@pytest.mark.parametrize("op_dir", [SCORE, ARGMAX], ids=["score_reference", "argmax_reference"])
def test_honest_controls_pass(tmp_path: Path, op_dir: Path) -> None:
    code, res = evaluate(tmp_path, op_dir, reference_candidate(op_dir))
    assert code == 0 and res["status"] == "PASS", res["message"]


def test_fixtures_declare_what_the_tests_assume() -> None:
    score = json.loads((SCORE / "definition.json").read_text())
    assert score["outputs"]["score"]["shape"] == ["num_tokens"]  # 1-D: a line per token
    workload = json.loads((SCORE / "workload.jsonl").read_text().splitlines()[0])
    assert workload["tolerance"]["max_rtol"] == 1e-3
