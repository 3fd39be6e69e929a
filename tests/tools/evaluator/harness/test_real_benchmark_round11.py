"""Round eleven's false-alarm hunt (a helper who had not written the evaluator, SOL-ExecBench's and
FlashInfer-Bench's public format documentation in hand): operators written as real problems are, each
with its own reference as the candidate, and honest candidates written differently from the reference.

What it found refused before this round, each PASSing now:
- r11_run_alias, r11_run_in_try_block: `run` bound without a top-level def (`run = torch.no_grad()(impl)`,
  a def inside `try: <fast path> except ImportError:`), and a custom generator made by functools.partial:
  exit 2, "defines no top-level run" (sol_format.module_bindings).
- r11_nn_module_weights, r11_backward_requires_grad_attr: the reference sets weights on a torch.nn module
  it made and `requires_grad` on a detached copy: REWARD_HACK from the source policy (policy.tensor_state,
  torch.nn instances in policy.own_instances).

Kept as it is, by the rule of issue 9 (class 5: an input the reference updates in place is the operator's
contract, compared like an output): r11_idempotent_inplace_mask's reference masks its `scores` input in
place (masked_fill_ with -inf) and does not return it; honest11b_masked_softmax_no_mutation leaves the
input alone and is INCORRECT, where SOL, which compares outputs only, passes it. The same rule keeps a
KV-cache write that the reference does not return compared. The message now says why.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.tools.evaluator.harness.test_adversarial import CANDIDATES
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate, reference_candidate

ROUND11 = sorted(p.name for p in FIXTURES.glob("r11_*"))
HONEST = [
    ("r11_gdn_decode_flashinfer_style", "honest11b_gdn_vectorized_dps"),
    ("r11_fp8_blockscale_gemm", "honest11b_fp8_blockscale_per_block"),
    ("r11_output_named_like_input", "honest11b_residual_rms_dps_named_like_inputs"),
    ("scalar_output", "honest11b_dps_scalar_outputs"),
]


def test_the_round_eleven_fixtures_are_all_here() -> None:
    assert len(ROUND11) == 14, ROUND11


@pytest.mark.slow
@pytest.mark.parametrize("name", ROUND11)
def test_each_passes_with_its_own_reference(tmp_path: Path, name: str) -> None:
    code, res = evaluate(tmp_path, FIXTURES / name, reference_candidate(FIXTURES / name))
    assert code == 0 and res["status"] == "PASS", res["message"]
    assert res["workloads"] and all(w["status"] == "PASS" for w in res["workloads"])


@pytest.mark.slow
@pytest.mark.parametrize(("name", "candidate"), HONEST, ids=[c for _, c in HONEST])
def test_an_honest_candidate_written_differently_passes(tmp_path: Path, name: str, candidate: str) -> None:
    code, res = evaluate(tmp_path, FIXTURES / name, (CANDIDATES / candidate / "kernel.py").read_text())
    assert code == 0 and res["status"] == "PASS", res["message"]


@pytest.mark.slow
def test_an_input_the_reference_updates_left_alone_is_incorrect_and_says_why(tmp_path: Path) -> None:
    source = (CANDIDATES / "honest11b_masked_softmax_no_mutation" / "kernel.py").read_text()
    code, res = evaluate(tmp_path, FIXTURES / "r11_idempotent_inplace_mask", source)
    assert code == 1 and res["status"] == "INCORRECT", res["message"]
    assert "input scores (updated in place)" in res["message"], res["message"]
    assert "the kernel left this input unchanged" in res["message"], res["message"]


@pytest.mark.slow
def test_a_reference_that_cannot_run_on_the_device_is_said_to_be_the_reference_s(tmp_path: Path) -> None:
    """Seen on the H200: r11_int8_gemm_dequant's first reference multiplied int64 matrices, which CUDA has
    no kernel for; the result said "harness failure" with a traceback, as if the evaluator were broken."""
    op = tmp_path / "op"
    shutil.copytree(FIXTURES / "r11_int8_gemm_dequant", op)
    definition = json.loads((op / "definition.json").read_text())
    unsupported = "    raise NotImplementedError(\"'addmm_cuda' not implemented for 'Long'\")\n"
    definition["reference"] = definition["reference"].replace("    acc = ", unsupported + "    acc = ", 1)
    (op / "definition.json").write_text(json.dumps(definition))
    code, res = evaluate(tmp_path, op, reference_candidate(FIXTURES / "r11_int8_gemm_dequant"))
    assert code == 1 and res["status"] == "INFRA_ERROR", res["message"]
    assert res["message"].startswith("the operator's reference raised on cpu (workload w8-"), res["message"]
    assert "addmm_cuda" in res["message"] and "harness failure" not in res["message"]
