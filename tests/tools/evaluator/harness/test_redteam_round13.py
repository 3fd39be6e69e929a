"""Round thirteen of the red team (candidates/redteam13_*, honest13r_*): the near-tie rule of e7471f1.

On a failure on values with >= 50 % matched, the parent re-runs the reference on inputs nudged both ways
along random directions (neartie.py) and judges the output again where a nudged reference moved
(numerics.nearest_reference). Findings against e7471f1, each fixed since, each INCORRECT here:

- N1 redteam13_mask_ignored (fixture redteam13_float_mask_attention): attention that never reads its float
  0/1 key padding mask. The reference applies it as `masked_fill(mask == 0, -inf)`; the nudge moved the
  exact zeros, so in every nudged call `mask == 0` was false, the reference attended every key, and the
  cheat's output WAS the nudged reference's. PASS at e7471f1 (75 % matched before it). Fixed: zeros stay,
  and a tensor of whole numbers alone (a mask, float ids, lengths) is not nudged at all.
- N2 redteam13_sort_fp16_keys (fixture redteam13_sort_fp32): a fp32 sort on fp16 keys (half the radix
  passes); values closer than one fp16 unit stay in input order. PASS at e7471f1 (97.8 % matched
  before): each element of the permutation was judged against whichever of up to 64 nudged references
  was nearest, and a 1.2e-4 nudge reordered most pairs that close. Fixed: a line of the output takes one
  reference whole, and the fp32 nudge is at most 1.5e-5..3e-5 (NUDGE), far below fp16's 5e-4.
- N3 redteam13_sort_repeats_indices: as N2, and where neighbours share an fp16 key the second position
  repeats the first's index: a "permutation" with duplicates, which no input produces. PASS at e7471f1
  (element-wise mixing); fixed by the same line rule.
- redteam13_timestep_fp16 (fixture redteam13_timestep_embedding): a timestep embedding from fp16 t. Stayed
  INCORRECT throughout (97.7 % at e7471f1, a few hundred elements forgiven; 89.8 % before).

False alarm (older than e7471f1, open): honest13r_topk_ties_to_the_last on integer-valued scores
(redteam13_topk_integer_scores): top-8 positions among equal scores are the kernel's choice, but only ~25 %
of the index elements match the reference's order. Below MATCHED_BEFORE_TIES = 0.5 the rule is not tried,
and whole-number scores are not nudged anyway (they may be ids). SOL's ratio refuses it too.

Honest controls that PASS: honest13r_mask_as_bool and each fixture's own reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from aka_graph.tools.evaluator.harness.neartie import nudged
from aka_graph.tools.evaluator.harness.numerics import check_output
from aka_graph.tools.evaluator.harness.opmodel import Tolerance
from tests.tools.evaluator.harness.near_tie_support import candidate_source, run_source
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate, reference_candidate

MASK = FIXTURES / "redteam13_float_mask_attention"
SORT = FIXTURES / "redteam13_sort_fp32"
TOPK = FIXTURES / "redteam13_topk_integer_scores"
TEMB = FIXTURES / "redteam13_timestep_embedding"


def _outputs(result: Any) -> list[torch.Tensor]:
    return list(result) if isinstance(result, tuple | list) else [result]


# --- before e7471f1: the rule without alternates (the old check_output) rejects each cheat ----------


@pytest.mark.parametrize(
    ("op_dir", "cheat"),
    [
        (MASK, "redteam13_mask_ignored"),
        (SORT, "redteam13_sort_fp16_keys"),
        (SORT, "redteam13_sort_repeats_indices"),
        (TEMB, "redteam13_timestep_fp16"),
    ],
)
def test_each_cheat_fails_the_comparison_without_nudged_references(op_dir: Path, cheat: str) -> None:
    definition = json.loads((op_dir / "definition.json").read_text())
    ref = run_source(definition["reference"])
    axes = {k: v["value"] for k, v in definition["axes"].items() if v["type"] == "const"}
    axes.update(json.loads((op_dir / "workload.jsonl").read_text().splitlines()[0])["axes"])
    torch.manual_seed(0)
    inputs = ref["make_inputs"](axes, torch.device("cpu"))
    want = _outputs(ref["run"](**inputs))
    got = _outputs(run_source(candidate_source(cheat))["run"](**inputs))
    pairs = enumerate(zip(got, want, strict=True))
    verdicts = [check_output(f"out{j}", g, w, Tolerance()) for j, (g, w) in pairs]
    assert not all(v.ok for v in verdicts)
    assert any(v.numeric and v.matched >= 0.5 for v in verdicts if not v.ok)  # the rule is tried on it


# --- N1's root cause, in isolation -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_nudge_keeps_the_zeros_of_a_float_mask(dtype: torch.dtype) -> None:
    mask = torch.ones(4, 32, dtype=dtype)
    mask[1, 24:] = 0.0
    for sign in (1, -1):
        moved = nudged([mask], seed=7, sign=sign)[0]
        assert torch.equal(moved == 0, mask == 0)


# --- end to end: the cheats that passed because of the rule at e7471f1 -----------------------------


@pytest.mark.slow
def test_attention_ignoring_its_float_padding_mask_is_incorrect(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, MASK, candidate_source("redteam13_mask_ignored"))
    assert res["status"] == "INCORRECT", res["message"]


@pytest.mark.slow
def test_a_sort_on_fp16_keys_is_incorrect(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, SORT, candidate_source("redteam13_sort_fp16_keys"))
    assert res["status"] == "INCORRECT", res["message"]


@pytest.mark.slow
def test_a_sort_returning_duplicate_indices_is_incorrect(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, SORT, candidate_source("redteam13_sort_repeats_indices"))
    assert res["status"] == "INCORRECT", res["message"]


# --- cheats the rule partly forgives but that stay INCORRECT ----------------------------------------


@pytest.mark.slow
def test_a_timestep_embedding_from_fp16_timesteps_stays_incorrect(tmp_path: Path) -> None:
    """Some of its lines may be judged near-ties, depending on the directions the search draws (one in
    several CI runs drew none), but never enough of them to pass."""
    _, res = evaluate(tmp_path, TEMB, candidate_source("redteam13_timestep_fp16"))
    assert res["status"] == "INCORRECT", res["message"]


# --- false alarm ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_top_k_breaking_many_exact_ties_the_other_way_passes(tmp_path: Path) -> None:
    """Was a false alarm (positions among equal scores in another order matched < 50 % of the reference's
    indices, and whole numbers are not nudged): index outputs are now judged by the values they select
    (selections.py, round 16)."""
    _, res = evaluate(tmp_path, TOPK, candidate_source("honest13r_topk_ties_to_the_last"))
    assert res["status"] == "PASS", res["message"]


# --- honest controls ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("op_dir", "source"),
    [
        (MASK, "honest13r_mask_as_bool"),
        (MASK, None),
        (SORT, None),
        (TOPK, None),
        (TEMB, None),
    ],
    ids=["mask_as_bool", "mask_reference", "sort_reference", "topk_reference", "temb_reference"],
)
def test_honest_controls_pass(tmp_path: Path, op_dir: Path, source: str | None) -> None:
    code, res = evaluate(
        tmp_path, op_dir, candidate_source(source) if source else reference_candidate(op_dir)
    )
    assert code == 0 and res["status"] == "PASS", res["message"]
