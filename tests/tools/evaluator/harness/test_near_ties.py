"""Near-ties in a gathered float output (found by CI at the end of round 12): an operator whose float
output is selected by an argmin/top-k (a VQ codebook lookup, MoE routing, nearest neighbours) has no right
answer where two candidates tie, and an honest kernel may break the tie the other way (or round its
distances differently, as the demo's fast kernel does with |c|^2 - 2 x.c). One row of thousands then
differs by a whole code: the matched ratio may hold, but "only near misses" and "no row mostly wrong"
called it INCORRECT; SOL would pass it.

The rule now (neartie.py, numerics.nearest_reference): on a failure, the parent runs the reference again on
inputs nudged both ways along fresh random directions, and an element where the reference itself moved
beyond the tolerance may match any of those answers. Stable elements keep their one right answer, so the
controls here must stay INCORRECT: a kernel dropping its last row (an edge bug a few-rows allowance would
forgive), and one routing every token to a wrong expert.

Two fixtures: near_tie_vq plants one exact fp32 tie per seed (found in the first direction, always);
near_tie_moe_bf16 draws bf16 router logits, whose second and third largest of 64 are equal for ~6 % of
tokens, some three ways (found over several directions)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.harness.session import Session, Settings, WorkloadVerdict
from tests.tools.evaluator.harness.test_adversarial import CANDIDATES
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate, reference_candidate

TIE = FIXTURES / "near_tie_vq"
MOE = FIXTURES / "near_tie_moe_bf16"
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
MOE_BODY = '''
import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(hidden, router_logits, expert_w):
    top = router_logits.float().topk({k}, dim=-1)
    values, experts = top.values[:, {first}:], top.indices[:, {first}:]
    gate = torch.softmax(values, dim=-1)
    out = torch.zeros(hidden.shape, dtype=torch.float32, device=hidden.device)
    for k in range(2):
        y = torch.bmm(hidden.float()[:, None, :], expert_w.float()[experts[:, k]]).squeeze(1)
        out += gate[:, k : k + 1] * y
    out[{rows}] = 0.0
    return out.to(torch.bfloat16)
'''
MOE_DROPS_LAST_TOKEN = MOE_BODY.format(k=2, first=0, rows="-1:")  # an edge bug on one token
MOE_WRONG_EXPERTS = MOE_BODY.format(k=3, first=1, rows=":0")  # the 2nd and 3rd experts, every token


def _near_ties(result: dict) -> int:
    message = result["workloads"][0]["message"]
    return int(message.split(" elements differ from the reference where it is unstable")[0].split()[-1])


@pytest.mark.slow
def test_the_planted_tie_operator_passes_with_its_own_reference(tmp_path: Path) -> None:
    code, res = evaluate(tmp_path, TIE, reference_candidate(TIE))
    assert code == 0 and res["status"] == "PASS", res["message"]
    assert "unstable" not in res["workloads"][0]["message"]  # its own reference needs no second look


@pytest.mark.slow
def test_an_honest_kernel_breaking_a_tie_the_other_way_passes_and_says_so(tmp_path: Path) -> None:
    source = (CANDIDATES / "honest12r_vq_ties_to_the_last" / "kernel.py").read_text()
    _, res = evaluate(tmp_path, TIE, source)
    assert res["status"] == "PASS", res["message"]
    # the timed calls' checks are
    # judged the same way but not counted
    assert _near_ties(res) == 3 * 16  # its whole row (16 dims) on each of the 3 correctness seeds


@pytest.mark.slow
def test_a_kernel_dropping_its_last_row_stays_incorrect(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, TIE, DROPS_LAST_ROW)
    assert res["status"] == "INCORRECT", res["message"]
    assert "mostly wrong" in res["message"] or "near misses" in res["message"], res["message"]


@pytest.mark.slow
def test_bf16_router_ties_broken_toward_the_last_expert_pass(tmp_path: Path) -> None:
    source = (CANDIDATES / "honest13_moe_ties_to_the_last" / "kernel.py").read_text()
    _, res = evaluate(tmp_path, MOE, source)
    assert res["status"] == "PASS", res["message"]
    assert _near_ties(res) > 100  # the fixture does draw ties: the test is not vacuous


@pytest.mark.slow
def test_the_moe_operator_passes_with_its_own_reference(tmp_path: Path) -> None:
    _, res = evaluate(tmp_path, MOE, reference_candidate(MOE))
    assert res["status"] == "PASS", res["message"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "source", [MOE_DROPS_LAST_TOKEN, MOE_WRONG_EXPERTS], ids=["drops_last_token", "wrong_experts"]
)
def test_moe_kernels_wrong_where_the_routing_is_stable_stay_incorrect(tmp_path: Path, source: str) -> None:
    _, res = evaluate(tmp_path, MOE, source)
    assert res["status"] == "INCORRECT", res["message"]


@pytest.mark.slow
def test_one_output_on_one_input_gets_one_near_tie_verdict() -> None:
    """The search's directions come from the evaluation's secret and the inputs' digest: a timed call and
    an untimed call that answer alike must get one verdict (spotcheck.labelled calls the kernel REWARD_HACK
    when they differ, and two random draws once did for an honest kernel)."""
    session = Session(Settings(op_dir=MOE, device="cpu"))
    idx = session.indices[0]
    make = partial(session.reference.inputs, idx, 12345, 1.0)
    inputs = make()
    want, _ = session.reference.outputs(idx, inputs)
    scope: dict = {}
    exec((CANDIDATES / "honest13_moe_ties_to_the_last" / "kernel.py").read_text(), scope)
    got = scope["run"](*inputs)
    seen = []
    for _ in range(3):
        verdict = WorkloadVerdict()
        passed = session.judge_outputs(verdict, [got], list(want), idx, "call", inputs=make)
        seen.append((passed, verdict.near_ties, verdict.message))
    assert seen[0][1] > 0 and seen.count(seen[0]) == 3, seen
