"""The campaign graph end to end with instant, honest fakes injected through the runtime context."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "nodes"))
from campaign_fakes import FakeAgent, make_context, write_fake_operator

from aka_graph.progress import Progress
from aka_graph.runner import RunOutcome, run_campaign
from aka_graph.state import CampaignConfig
from aka_graph.tools.records.ledger import Ledger
from aka_graph.tools.records.memory import read_version_records

STANDARD = dict(platform="cpu", max_iters=3, fast_episodes=1, fast_trials=3, reviewers=["r1", "r2"])


def campaign(
    tmp_path: Path, context: Any = None, agent: FakeAgent | None = None, **settings: Any
) -> tuple[RunOutcome, Any]:
    """A campaign on the fake operator with STANDARD settings overridden by `settings` (and `agent`)."""
    op = write_fake_operator(tmp_path / "op")
    config = CampaignConfig(
        op_dir=str(op), agent_cli="fake", workspace=str(tmp_path / "ws"), **{**STANDARD, **settings}
    )
    ctx = context or make_context(config)
    if agent is not None:
        ctx.agent = agent
    return run_campaign(config, ctx, progress=Progress.for_terminal(quiet=True)), ctx


def git(root: str, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def test_standard_campaign_records_v0_failure_rejection_and_promotions(tmp_path: Path) -> None:
    outcome, _ctx = campaign(tmp_path)
    values = outcome.values
    root = values["workspace_root"]
    records = read_version_records(Path(root))
    assert [(r.version, r.decision) for r in records] == [
        (0, "baseline"),
        (1, "promoted"),
        (2, "rejected"),
        (3, "promoted"),
    ]
    assert values["stop_reason"] == "max-iters"
    assert values["incumbent"].version == 3 and values["incumbent"].objective == pytest.approx(70.0)
    # the campaign picked trial 2 (objective 90) over trial 3 (95) and the INCORRECT trial 1 (80)
    assert "trial 1: INCORRECT" in records[1].experiments[0]
    assert records[1].objective == pytest.approx(90.0)
    ledger = Ledger(Path(root) / "records" / "ledger.sqlite")
    trials = ledger.entries(episode=1, role="trial")
    assert [e.status for e in trials] == ["INCORRECT", "PASS", "PASS"]
    assert len({e.kernel_sha256 for e in trials}) == 3
    kinds = {(d.episode, d.kind): d.decision for d in ledger.decisions()}
    assert kinds[(1, "verify")] == "promoted" and kinds[(2, "verify")] == "rejected"
    assert json.loads((Path(root) / "kernel.py").read_text().split("\n")[0].split("latency=")[1]) == 70.0
    log = git(root, "log", "--format=%s", "campaign").splitlines()
    assert log[0] == "submission.json for v3"  # finish commits the submission of the incumbent
    assert log[1].startswith("v3 (episode 3): promoted") and "v2 (episode 2): rejected" in log[3]


def test_every_agent_session_counts_against_the_token_budget(tmp_path: Path) -> None:
    outcome, _ctx = campaign(tmp_path)
    values = outcome.values
    # episode 1: 3 implementer turns; episodes 2 and 3: planner + 2 reviewers + implementer each
    assert values["agent_sessions"] == 3 + 4 + 4
    assert values["tokens_spent"] == 11 * 1200
    ledger = Ledger(Path(values["workspace_root"]) / "records" / "ledger.sqlite")
    assert ledger.token_total() == values["tokens_spent"]


def test_token_budget_stops_the_campaign_after_the_episode_that_spent_it(tmp_path: Path) -> None:
    outcome, _ = campaign(tmp_path, token_budget=3 * 1200 + 1, max_iters=10)
    values = outcome.values
    assert values["stop_reason"] == "token-budget"
    assert values["tokens_spent"] >= 3 * 1200 + 1
    assert values["episode"] == 2  # episode 2 began with budget left; no episode 3


def test_token_budget_cuts_fast_trials_short_and_verifies_what_exists(tmp_path: Path) -> None:
    outcome, _ctx = campaign(tmp_path, token_budget=2 * 1200, max_iters=10)
    records = read_version_records(Path(outcome.values["workspace_root"]))
    assert len(records[1].experiments) == 2 and records[1].decision == "promoted"
    assert outcome.values["stop_reason"] == "token-budget"


def test_environment_failure_waits_for_health_and_resumes_without_charging_the_candidate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AKA_FAKE_OUTAGE_ON_EVAL", "3")  # the 3rd evaluator call: episode 1 trial 2
    outcome, ctx = campaign(tmp_path, max_iters=1)
    records = read_version_records(Path(outcome.values["workspace_root"]))
    assert records[1].decision == "promoted" and records[1].objective == pytest.approx(90.0)
    assert ctx.sandbox.health_calls >= 3  # the probe was polled until it passed
    ledger = Ledger(Path(outcome.values["workspace_root"]) / "records" / "ledger.sqlite")
    assert [e.status for e in ledger.entries(episode=1, role="trial")] == ["INCORRECT", "PASS", "PASS"]
    assert outcome.values["tokens_spent"] == 3 * 1200  # trial 2 was not re-implemented


def test_a_trial_that_edits_protected_files_is_rejected_unevaluated(tmp_path: Path) -> None:
    outcome, _ = campaign(
        tmp_path, agent=FakeAgent(forbidden_on=("1", "2")), max_iters=1, fast_trials=2, reviewers=[]
    )
    root = Path(outcome.values["workspace_root"])
    records = read_version_records(root)
    assert "trial 2: FORBIDDEN_EDIT" in records[1].experiments[1]
    assert records[1].decision == "incorrect"  # trial 1 evaluated INCORRECT, trial 2 never evaluated
    assert json.loads((root / "op" / "definition.json").read_text())["name"] == "fake_op"


def test_production_mode_pins_v1_and_runs_the_policy_review(tmp_path: Path) -> None:
    outcome, ctx = campaign(tmp_path, optimization_mode="production", max_iters=1, reviewers=[])
    records = read_version_records(Path(outcome.values["workspace_root"]))
    assert [(r.version, r.kind, r.decision) for r in records] == [
        (0, "v0", "baseline"),
        (1, "v1", "pinned"),
        (2, "episode", "promoted"),
    ]
    assert any(run.role == "policy_reviewer" for run in ctx.agent.runs)


def test_rerunning_a_finished_campaign_reports_instead_of_restarting(tmp_path: Path) -> None:
    first, _ = campaign(tmp_path, max_iters=1)
    again, _ = campaign(tmp_path, max_iters=1)
    assert again.status == "already-finished" and again.values["tokens_spent"] == first.values["tokens_spent"]


def test_rerunning_with_other_settings_is_refused_naming_them(tmp_path: Path) -> None:
    from aka_graph.runner import CampaignConflict

    campaign(tmp_path, max_iters=1)
    with pytest.raises(CampaignConflict, match="max_iters"):
        campaign(tmp_path, max_iters=2)


def test_triton_campaign_converts_to_gluon_after_stalls_and_stays_there(tmp_path: Path) -> None:
    # episode 1 stalls (slower); episode 2 converts at parity (+3% slower passes); episode 3 is faster
    agent = FakeAgent(
        script={"1": {"1": ("PASS", 110.0)}, "2": {"1": ("PASS", 103.0)}, "3": {"1": ("PASS", 80.0)}}
    )
    outcome, ctx = campaign(
        tmp_path, agent=agent, platform="H200", fast_trials=1, convert_after=1, max_stall=5, reviewers=[]
    )
    records = read_version_records(Path(outcome.values["workspace_root"]))
    assert [(r.version, r.framework, r.decision) for r in records[1:]] == [
        (1, "triton", "rejected"),
        (2, "gluon", "promoted"),
        (3, "gluon", "promoted"),
    ]
    assert "(parity)" in records[2].verdict["reason"]
    implementers = [run for run in ctx.agent.runs if run.role == "implementer"]
    assert [run.labels.get("framework") for run in implementers] == ["triton", "gluon", "gluon"]
    assert "Convert the incumbent kernel to gluon" in implementers[1].prompt
    assert "Convert" not in implementers[2].prompt
    assert outcome.values["incumbent"].framework == "gluon"


def test_a_failed_conversion_is_retried_while_stalled_until_max_stall(tmp_path: Path) -> None:
    agent = FakeAgent(script={str(e): {"1": ("PASS", 120.0)} for e in range(1, 11)})
    outcome, _ = campaign(
        tmp_path, agent=agent, platform="H200", max_iters=10, fast_trials=1, convert_after=1, max_stall=3,
        reviewers=[],
    )
    assert outcome.values["stop_reason"] == "max-stall" and outcome.values["episode"] == 3
    records = read_version_records(Path(outcome.values["workspace_root"]))
    assert [r.framework for r in records[1:]] == ["triton", "gluon", "gluon"]
    assert all(r.decision == "rejected" for r in records[1:])


def test_production_campaign_on_a_native_operator_passes_the_final_policy_check(tmp_path: Path) -> None:
    from campaign_fakes import write_fake_native_operator

    op = write_fake_native_operator(tmp_path / "rms")
    config = CampaignConfig(
        op_dir=str(op),
        agent_cli="fake",
        platform="cpu",
        workspace=str(tmp_path / "ws"),
        optimization_mode="production",
        max_iters=1,
        fast_episodes=1,
        fast_trials=2,
    )
    outcome = run_campaign(config, make_context(config), progress=Progress.for_terminal(quiet=True))
    root = Path(outcome.values["workspace_root"])
    assert outcome.values["stop_reason"] == "max-iters"
    policy = [d for d in Ledger(root / "records" / "ledger.sqlite").decisions() if d.kind == "final_policy"]
    assert [(d.decision, d.numbers["problems"]) for d in policy] == [("pass", [])]
    assert outcome.values["submission_path"] is None  # native operators have no SOL submission


def test_an_agent_turn_is_stopped_when_it_would_exceed_the_token_budget(tmp_path: Path) -> None:
    outcome, _ = campaign(tmp_path, token_budget=2 * 1200 + 600, max_iters=10, fast_trials=5, reviewers=[])
    values = outcome.values
    records = read_version_records(Path(values["workspace_root"]))
    assert values["stop_reason"] == "token-budget" and values["agent_sessions"] == 3
    assert records[1].experiments[2].startswith("trial 3: BUDGET_STOPPED")
    assert (
        len(records[1].experiments) == 3 and records[1].decision == "promoted"
    )  # trial 2 was still verified


def test_v1_gets_reviewer_guidance_before_the_agent_writes_it(tmp_path: Path) -> None:
    outcome, ctx = campaign(tmp_path, optimization_mode="production", max_iters=1)
    root = Path(outcome.values["workspace_root"])
    guidance = sorted(p.name for p in (root / "results" / "e0" / "reviews").iterdir())
    assert guidance == ["r1.md", "r2.md"]
    v1_turn = next(r for r in ctx.agent.runs if r.labels.get("episode") == "v1")
    assert sorted(p.name for p in (v1_turn.cwd / "plans" / "reviews").iterdir()) == ["r1.md", "r2.md"]
    records = read_version_records(root)
    assert records[1].kind == "v1" and records[1].decision == "pinned"
    # V1 reviews + V1 + V1's policy review + 3 fast trials + the chosen trial's policy review
    assert outcome.values["agent_sessions"] == 2 + 1 + 1 + 3 + 1
