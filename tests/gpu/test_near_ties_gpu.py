"""On a CUDA GPU, the near-tie rule (tests/tools/evaluator/harness/test_near_ties.py) with the timed path
too: honest kernels that break ties another way than torch's CUDA argmin/topk PASS, with their timed calls,
re-validation and CUDA-graph copies judged by the same rule, and the controls wrong where the reference is
stable stay INCORRECT.

Run: python3 -m pytest -m gpu tests/gpu/test_near_ties_gpu.py -v -s"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.tools.evaluator.harness.test_adversarial import CANDIDATES
from tests.tools.evaluator.harness.test_near_ties import (
    DROPS_LAST_ROW,
    MOE,
    MOE_DROPS_LAST_TOKEN,
    MOE_WRONG_EXPERTS,
    TIE,
)
from tests.tools.evaluator.harness.test_real_benchmark_classes import evaluate, reference_candidate
from tests.tools.evaluator.harness.test_redteam_round13 import MASK as MASK_OP
from tests.tools.evaluator.harness.test_redteam_round13 import SORT as SORT_OP
from tests.tools.evaluator.harness.test_redteam_round14 import ARGMAX as ARGMAX_OP
from tests.tools.evaluator.harness.test_redteam_round14 import SCORE as SCORE_OP

pytestmark = pytest.mark.gpu

HONEST = {"vq": (TIE, "honest12r_vq_ties_to_the_last"), "moe": (MOE, "honest13_moe_ties_to_the_last")}
WRONG = {
    "vq_drops_last_row": (TIE, DROPS_LAST_ROW),
    "moe_drops_last_token": (MOE, MOE_DROPS_LAST_TOKEN),
    "moe_wrong_experts": (MOE, MOE_WRONG_EXPERTS),
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_tie_breaking_passes_on_cuda(tmp_path: Path, name: str) -> None:
    op, candidate = HONEST[name]
    t0 = time.perf_counter()
    code, res = evaluate(tmp_path, op, (CANDIDATES / candidate / "kernel.py").read_text(), device="cuda")
    for w in res["workloads"]:
        print(
            f"{name}: {w['status']} in {time.perf_counter() - t0:.1f} s, {w['timing_method']}, "
            f"latency {w['latency_us']} us, reference {w['reference_latency_us']} us: {w['message'][:200]}"
        )
    assert code == 0 and res["status"] == "PASS", res["message"]


@pytest.mark.parametrize("op", [TIE, MOE], ids=["vq", "moe"])
def test_the_tie_operators_pass_on_cuda_with_their_own_references(tmp_path: Path, op: Path) -> None:
    code, res = evaluate(tmp_path, op, reference_candidate(op), device="cuda")
    assert code == 0 and res["status"] == "PASS", res["message"]


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_where_the_reference_is_stable_stays_incorrect_on_cuda(tmp_path: Path, name: str) -> None:
    op, source = WRONG[name]
    _, res = evaluate(tmp_path, op, source, device="cuda")
    print(f"{name}: {res['status']}: {res['message'][:200]}")
    assert res["status"] == "INCORRECT", res["message"]


# red team round 13 (tests/tools/evaluator/harness/test_redteam_round13.py): cheats the rule forgave at
# e7471f1, and the honest controls beside them, on CUDA
REDTEAM = {
    "mask_ignored": (MASK_OP, "redteam13_mask_ignored", "INCORRECT"),
    "sort_fp16_keys": (SORT_OP, "redteam13_sort_fp16_keys", "INCORRECT"),
    "sort_repeats_indices": (SORT_OP, "redteam13_sort_repeats_indices", "INCORRECT"),
    "mask_as_bool": (MASK_OP, "honest13r_mask_as_bool", "PASS"),
    # round 14 (test_redteam_round14.py): a 1-D output has a line per element where each element is one
    # row's (neartie.line_width): an honest greedy arg-max's ties pass, one flip forgives one token only
    "argmax_ties_to_the_last": (ARGMAX_OP, "honest14_argmax_ties_to_the_last", "PASS"),
    "score_ties_to_the_other": (SCORE_OP, "honest14_score_ties_to_the_other", "PASS"),
    "score_bf16_after_one_flip": (SCORE_OP, "redteam14_score_bf16_after_one_flip", "INCORRECT"),
}


@pytest.mark.parametrize("name", sorted(REDTEAM))
def test_red_team_rounds_13_and_14_on_cuda(tmp_path: Path, name: str) -> None:
    op, candidate, expected = REDTEAM[name]
    _, res = evaluate(tmp_path, op, (CANDIDATES / candidate / "kernel.py").read_text(), device="cuda")
    print(f"{name}: {res['status']}: {res['message'][:200]}")
    assert res["status"] == expected, res["message"]
