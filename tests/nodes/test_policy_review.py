"""Production mode reviews every candidate that can become the incumbent: V1 before it is pinned, and in
an episode each passing trial the campaign could pick, best first, until one passes."""

from __future__ import annotations

from pathlib import Path

from campaign_fakes import FakeAgent, make_context, write_fake_native_operator

from aka_graph.nodes.eval_timeout import evaluation_timeout_s, verification_timeout_s
from aka_graph.progress import Progress
from aka_graph.runner import RunOutcome, run_campaign
from aka_graph.state import CampaignConfig
from aka_graph.tools.records.ledger import Ledger
from aka_graph.tools.records.memory import read_version_records

# episode 1: trial 1 INCORRECT, trial 2 the best (90), trial 3 second best (95); V1 at 100
SCRIPT = {
    "v1": {"1": ("PASS", 100.0)},
    "1": {"1": ("INCORRECT", 80.0), "2": ("PASS", 90.0), "3": ("PASS", 95.0)},
}


def production_campaign(tmp_path: Path, agent: FakeAgent) -> tuple[RunOutcome, Path]:
    op = write_fake_native_operator(tmp_path / "rms")
    config = CampaignConfig(
        op_dir=str(op), agent_cli="fake", platform="cpu", workspace=str(tmp_path / "ws"),
        optimization_mode="production", max_iters=1, fast_episodes=1, fast_trials=3, reviewers=[],
    )
    context = make_context(config)
    context.agent = agent
    outcome = run_campaign(config, context, progress=Progress.for_terminal(quiet=True))
    return outcome, Path(outcome.values["workspace_root"])


def policy_decisions(root: Path) -> dict[tuple[int | None, str], str]:
    return {(d.episode, d.kind): d.decision for d in Ledger(root / "records" / "ledger.sqlite").decisions()
            if d.kind.startswith("policy")}


def test_v1_and_the_picked_trial_are_reviewed(tmp_path: Path) -> None:
    outcome, root = production_campaign(tmp_path, FakeAgent(script=SCRIPT))
    assert policy_decisions(root) == {
        (0, "policy_trial1"): "pass", (0, "policy"): "pass",  # V1, before it was pinned
        (1, "policy_trial2"): "pass", (1, "policy"): "pass",  # the best trial, the only one needed
    }
    records = read_version_records(root)
    assert records[1].decision == "pinned" and records[1].quality_gate.checks == {"policy_review": True}
    assert outcome.values["failed"] is None


def test_a_rejected_best_trial_falls_back_to_the_next_passing_one(tmp_path: Path) -> None:
    agent = FakeAgent(script=SCRIPT, policy_fail=frozenset({("1", "2")}))
    _, root = production_campaign(tmp_path, agent)
    assert policy_decisions(root)[(1, "policy_trial2")] == "fail"
    assert policy_decisions(root)[(1, "policy_trial3")] == "pass"
    records = read_version_records(root)
    assert records[2].decision == "promoted" and records[2].objective == 95.0  # trial 3, reviewed, verified
    reviewed = [(r.labels["episode"], r.labels["trial"]) for r in agent.runs if r.role == "policy_reviewer"]
    assert reviewed == [("v1", "1"), ("1", "2"), ("1", "3")]


def test_v1_rejected_by_the_policy_review_is_never_pinned(tmp_path: Path) -> None:
    _, root = production_campaign(tmp_path, FakeAgent(script=SCRIPT, policy_fail=frozenset({("v1", "1")})))
    records = read_version_records(root)
    assert records[1].kind == "v1" and records[1].decision == "policy_rejected"
    assert records[1].quality_gate.passed is False and records[1].commit is None
    assert records[2].verdict["incumbent_sha256"] == records[0].kernel_sha256  # episode 1 had to beat V0


def test_the_evaluation_timeout_grows_with_workloads_and_seeds(tmp_path: Path) -> None:
    op = write_fake_native_operator(tmp_path / "rms")  # 3 workloads
    default = CampaignConfig(op_dir=str(op), seeds=3, verify_repeats=2)
    assert evaluation_timeout_s(default, op) == 300 + 15 * 3 * 3
    assert verification_timeout_s(default, op) == 2 * 2 * (300 + 15 * 3 * 3)
    assert evaluation_timeout_s(default.model_copy(update={"eval_timeout_s": 60.0}), op) == 60.0
