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

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from aka_graph.tools.evaluator.harness.neartie import nudged
from aka_graph.tools.evaluator.harness.numerics import check_output
from aka_graph.tools.evaluator.harness.opmodel import Tolerance
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate, reference_candidate
from tests.tools.evaluator.harness.test_redteam_round13 import _candidate, _module

MOE = FIXTURES / "near_tie_moe_bf16"
TIE = FIXTURES / "near_tie_vq"
FLAT = FIXTURES / "redteam13b_multihead_routing_flat"
WHOLE = FIXTURES / "redteam13b_vq_whole_numbers"



def _reference(op_dir: Path) -> dict[str, Any]:
    return _module(json.loads((op_dir / "definition.json").read_text())["reference"])


def _custom_inputs(op_dir: Path) -> list[torch.Tensor]:
    definition = json.loads((op_dir / "definition.json").read_text())
    axes = {k: v["value"] for k, v in definition["axes"].items() if v["type"] == "const"}
    axes.update(json.loads((op_dir / "workload.jsonl").read_text().splitlines()[0])["axes"])
    torch.manual_seed(0)
    made = _reference(op_dir)["make_inputs"](axes, torch.device("cpu"))
    return [made[name] for name in definition["inputs"]]


def _moe_inputs(seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(2048, 32, generator=g).bfloat16()
    logits = torch.randn(2048, 64, generator=g).bfloat16()
    return [hidden, logits, (torch.randn(64, 32, 32, generator=g) / 6).bfloat16()]


def _search(
    ref: Any,
    got: torch.Tensor,
    inputs: list[torch.Tensor],
    directions: int = 48,
    tol: Tolerance | None = None,
    width: int | None = None,
) -> Any:
    """The session's near-tie search in process (all inputs, then each alone, both signs), folded;
    `tol` the workload's (default: the SOL default), `width` the lines' (numerics.check_output)."""
    want, tol, verdict = ref(*inputs), tol or Tolerance(), None
    count = 1 + sum(1 for x in inputs if x.dtype.is_floating_point and not bool((x == x.round()).all()))
    for k in range(directions):
        part = None if k % count == 0 else k % count - 1
        both = [ref(*nudged(inputs, 1000 + k, sign, 2.0**-16, part)) for sign in (1, -1)]
        verdict = check_output("out", got, want, tol, [(both[0], both[1])], width, prior=verdict)
        if verdict.ok:
            break
    return verdict


# --- B1: without the rule the cheat fails; with it, it passes ---------------------------------------


def test_routing_on_truncated_logits_fails_without_nudged_references() -> None:
    inputs = _moe_inputs()
    want = _reference(MOE)["run"](*inputs)
    got = _module(_candidate("redteam13b_moe_route_on_truncated_logits"))["run"](*inputs)
    verdict = check_output("out", got, want, Tolerance())
    assert not verdict.ok and verdict.numeric and verdict.matched >= 0.5, verdict.message


@pytest.mark.xfail(
    strict=True,
    reason="B1: a bf16 nudge (-1/0/+1 unit) is as large as the error of routing on logits one bit "
    "coarser: the nudged references explain the wrong routes and the cheat passes",
)
def test_routing_on_truncated_logits_stays_incorrect_with_nudged_references() -> None:
    inputs = _moe_inputs()
    got = _module(_candidate("redteam13b_moe_route_on_truncated_logits"))["run"](*inputs)
    verdict = _search(_reference(MOE)["run"], got, inputs)
    assert not verdict.ok, verdict.message


@pytest.mark.slow
@pytest.mark.xfail(
    strict=False,  # the search's directions are drawn afresh each evaluation: it usually, not always, passes
    reason="B1: routing on truncated bf16 logits PASSes through the near-tie rule (most runs)",
)
def test_routing_on_truncated_logits_is_incorrect(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, MOE, _candidate("redteam13b_moe_route_on_truncated_logits"))
    assert res["status"] == "INCORRECT", res["message"]


# --- F1: several independent ties in one row ---------------------------------------------------------


def test_the_same_ties_one_row_per_head_are_forgiven() -> None:
    """The control for F1: the same selections, one row per head ([T * H, D]), pass with the rule."""
    inputs = _custom_inputs(FLAT)
    T, H, _ = inputs[0].shape

    def per_head(run: Any) -> Any:
        return lambda *xs: run(*xs).reshape(T * H, -1)

    ref = per_head(_reference(FLAT)["run"])
    got = per_head(_module(_candidate("honest13b_multihead_ties_to_the_last"))["run"])(*inputs)
    assert not check_output("out", got, ref(*inputs), Tolerance()).ok  # the ties are there
    verdict = _search(ref, got, inputs)
    assert verdict.ok and verdict.near_ties > 0, verdict.message


@pytest.mark.slow
@pytest.mark.xfail(
    strict=False,  # a direction that flips every tie of a row at once is drawn now and then: CI saw a PASS
    reason="F1: a row takes one nudged reference whole, so a row with several ties broken the other way "
    "stays unexplained (most runs)",
)
def test_several_ties_in_one_row_broken_the_other_way_pass(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, FLAT, _candidate("honest13b_multihead_ties_to_the_last"))
    assert res["status"] == "PASS", res["message"]


# --- F2: ties among whole numbers are never nudged --------------------------------------------------


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True, reason="F2: whole-number activations and codes are never nudged: their ties are not forgiven"
)
def test_vq_ties_among_whole_numbers_broken_the_other_way_pass(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, WHOLE, _candidate("honest13b_vq_whole_ties_to_the_last"))
    assert res["status"] == "PASS", res["message"]


# --- F3 (fixed): the near-tie budget was wall-clock time from the session's start -------------------


@pytest.mark.slow
def test_a_tie_broken_the_other_way_by_a_kernel_with_a_long_build_passes(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, TIE, _candidate("honest13b_slow_build_vq_ties"), timeout_s=600)
    assert res["status"] == "PASS", res["message"]


# --- honest controls ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("op_dir", [FLAT, WHOLE], ids=["flat_reference", "whole_reference"])
def test_honest_controls_pass(tmp_path: Path, op_dir: Path) -> None:
    code, res = evaluate(tmp_path, op_dir, reference_candidate(op_dir))
    assert code == 0 and res["status"] == "PASS", res["message"]
