"""Round thirteen b of the red team (candidates/redteam13b_*, honest13b_*): the near-tie rule as fixed after
round 13 (neartie.py, numerics.nearest_reference, Session._near_tie_verdict).

Cheat that PASSes because of the rule (open):

- B1 redteam13b_moe_route_on_truncated_logits (fixture near_tie_moe_bf16): top-2 routing on bf16 logits
  with their lowest mantissa bit cleared, so logits one unit apart compare equal. Without alternates the
  output fails ("off by more than 16x their tolerance"); with them it PASSes, thousands of elements
  "judged as near-ties": a bf16 nudge is -1/0/+1 unit per input, as large as the kernel's error, so the
  nudged references reproduce its wrong routes. The nudge forgives any selection computed one unit coarser.

False alarms on honest kernels (F1, F2 open):

- F1 honest13b_multihead_ties_to_the_last (fixture redteam13b_multihead_routing_flat): per-head top-1 over
  bf16 logits, the heads' vectors side by side in one row [T, H * D]. A row takes ONE nudged reference's
  row whole, so a row holding two or more ties the kernel broke the other way needs one direction that
  flips all of them: some stay unexplained ("off by more than 16x"). The same kernel with one row per head
  ([T * H, D]) passes (test_the_same_ties_one_row_per_head_are_forgiven).
- F2 honest13b_vq_whole_ties_to_the_last (fixture redteam13b_vq_whole_numbers): VQ on quantized
  activations and codes stored as float (whole numbers): exact ties everywhere, but a tensor of whole
  numbers alone is never nudged, so the rule never runs; ~15 % of elements differ (below the 99 % ratio).
- F3 (fixed since) honest13b_slow_build_vq_ties (fixture near_tie_vq): honest12r_vq_ties_to_the_last
  (which PASSes) with a 125 s load (a build, an autotuning sweep; the compile timeout is 300 s). BUDGET_S
  was a wall-clock deadline from the session's start, spent before the first output was judged: the tie
  row was INCORRECT. Now the budget counts the search's own reference calls (Session.near_tie_left_s).

Attacks the rule withstood (measured in-process with the session's loop, not kept as candidates): routing
on fp8 e4m3/e5m2 keys or on logits with 2 bits dropped (INCORRECT, 87-99 % matched with the rule); kNN
distances [Q, 1] by |a|^2+|b|^2-2ab on offset data (no alternate moved: ties=0); skipping work on rows
with one unstable element (a nudged row equals the reference on its stable elements).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

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
TIE = FIXTURES / "near_tie_vq"
FLAT = FIXTURES / "redteam13b_multihead_routing_flat"
WHOLE = FIXTURES / "redteam13b_vq_whole_numbers"


# --- B1: without the rule the cheat fails; with it, it passes ---------------------------------------


def test_routing_on_truncated_logits_fails_without_nudged_references() -> None:
    inputs = moe_inputs()
    want = reference_module(MOE)["run"](*inputs)
    got = run_source(candidate_source("redteam13b_moe_route_on_truncated_logits"))["run"](*inputs)
    verdict = check_output("out", got, want, Tolerance())
    assert not verdict.ok and verdict.numeric and verdict.matched >= 0.5, verdict.message


@pytest.mark.xfail(
    strict=True,
    reason="B1: a bf16 nudge (-1/0/+1 unit) is as large as the error of routing on logits one bit "
    "coarser: the nudged references explain the wrong routes and the cheat passes",
)
def test_routing_on_truncated_logits_stays_incorrect_with_nudged_references() -> None:
    inputs = moe_inputs()
    got = run_source(candidate_source("redteam13b_moe_route_on_truncated_logits"))["run"](*inputs)
    verdict = near_tie_search(reference_module(MOE)["run"], got, inputs)
    assert not verdict.ok, verdict.message


@pytest.mark.slow
@pytest.mark.xfail(
    strict=False,  # the search's directions are drawn afresh each evaluation: it usually, not always, passes
    reason="B1: routing on truncated bf16 logits PASSes through the near-tie rule (most runs)",
)
def test_routing_on_truncated_logits_is_incorrect(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, MOE, candidate_source("redteam13b_moe_route_on_truncated_logits"))
    assert res["status"] == "INCORRECT", res["message"]


# --- F1: several independent ties in one row ---------------------------------------------------------


def test_the_same_ties_one_row_per_head_are_forgiven() -> None:
    """The control for F1: the same selections, one row per head ([T * H, D]), pass with the rule."""
    inputs = custom_inputs(FLAT)
    T, H, _ = inputs[0].shape

    def per_head(run: Any) -> Any:
        return lambda *xs: run(*xs).reshape(T * H, -1)

    ref = per_head(reference_module(FLAT)["run"])
    got = per_head(run_source(candidate_source("honest13b_multihead_ties_to_the_last"))["run"])(*inputs)
    assert not check_output("out", got, ref(*inputs), Tolerance()).ok  # the ties are there
    verdict = near_tie_search(ref, got, inputs)
    assert verdict.ok and verdict.near_ties > 0, verdict.message


@pytest.mark.slow
@pytest.mark.xfail(
    strict=False,  # a direction that flips every tie of a row at once is drawn now and then: CI saw a PASS
    reason="F1: a row takes one nudged reference whole, so a row with several ties broken the other way "
    "stays unexplained (most runs)",
)
def test_several_ties_in_one_row_broken_the_other_way_pass(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, FLAT, candidate_source("honest13b_multihead_ties_to_the_last"))
    assert res["status"] == "PASS", res["message"]


# --- F2: ties among whole numbers are never nudged --------------------------------------------------


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True, reason="F2: whole-number activations and codes are never nudged: their ties are not forgiven"
)
def test_vq_ties_among_whole_numbers_broken_the_other_way_pass(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, WHOLE, candidate_source("honest13b_vq_whole_ties_to_the_last"))
    assert res["status"] == "PASS", res["message"]


# --- F3 (fixed): the near-tie budget was wall-clock time from the session's start -------------------


@pytest.mark.slow
def test_a_tie_broken_the_other_way_by_a_kernel_with_a_long_build_passes(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, TIE, candidate_source("honest13b_slow_build_vq_ties"), timeout_s=600)
    assert res["status"] == "PASS", res["message"]


# --- honest controls ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("op_dir", [FLAT, WHOLE], ids=["flat_reference", "whole_reference"])
def test_honest_controls_pass(tmp_path: Path, op_dir: Path) -> None:
    code, res = evaluate(tmp_path, op_dir, reference_candidate(op_dir))
    assert code == 0 and res["status"] == "PASS", res["message"]
