"""The framework-purity gate of the campaign (frameworks.framework_purity): a candidate whose main work is
a torch op is not a kernel of the campaign's framework. In every mode an impure trial is rejected before
evaluation (status IMPURE, the episode recorded as policy_rejected); in production the policy review
rejects an impure candidate (V1 included) without asking the reviewer agent."""

from __future__ import annotations

from pathlib import Path

from campaign_fakes import FakeAgent, fake_kernel, make_context, write_fake_operator

from aka_graph.progress import Progress
from aka_graph.runner import RunOutcome, run_campaign
from aka_graph.state import CampaignConfig
from aka_graph.tools.records.layout import CampaignLayout
from aka_graph.tools.records.ledger import Ledger
from aka_graph.tools.records.memory import read_version_records

SCRIPT = {"v1": {"1": ("PASS", 100.0)}, "1": {"1": ("PASS", 50.0), "2": ("PASS", 90.0)}}


def campaign(
    tmp_path: Path, agent: FakeAgent, mode: str, framework: str = "triton"
) -> tuple[RunOutcome, Path, list[str]]:
    op = write_fake_operator(tmp_path / "op")
    config = CampaignConfig(
        op_dir=str(op), agent_cli="fake", platform="cpu" if framework == "triton" else "H200",
        framework=framework, workspace=str(tmp_path / "ws"),
        optimization_mode=mode, v1="always", max_iters=1, fast_episodes=1, fast_trials=2, reviewers=[],
    )
    context = make_context(config)
    context.agent = agent
    outcome = run_campaign(config, context, progress=Progress.for_terminal(quiet=True))
    return outcome, Path(outcome.values["workspace_root"]), context.evaluator.evaluated


def test_an_impure_trial_is_not_evaluated_and_the_next_pure_one_is_promoted(tmp_path: Path) -> None:
    # trial 1 would be the fastest (50) but does its work in torch.softmax: never evaluated nor picked
    agent = FakeAgent(script=SCRIPT, torch_only=frozenset({("1", "1")}))
    outcome, root, evaluated = campaign(tmp_path, agent, "leaderboard")
    layout = CampaignLayout(root)
    assert str(layout.trial_kernel(1, 1)) not in evaluated and str(layout.trial_kernel(1, 2)) in evaluated
    records = read_version_records(root)
    assert [r.decision for r in records] == ["baseline", "pinned", "promoted"]
    assert records[2].objective == 90.0  # trial 2, not the impure 50
    assert any(e.startswith("trial 1: IMPURE") and "not a Triton kernel" in e for e in records[2].experiments)
    impure = outcome.values["trials"][0]
    assert impure.status == "IMPURE"
    assert "kernel.py:7: torch.softmax(...) does the work in torch" in impure.message


def test_an_episode_of_only_impure_trials_is_recorded_policy_rejected(tmp_path: Path) -> None:
    agent = FakeAgent(script=SCRIPT, torch_only=frozenset({("1", "1"), ("1", "2")}))
    _, root, _ = campaign(tmp_path, agent, "leaderboard")
    records = read_version_records(root)
    assert records[2].decision == "policy_rejected" and records[2].commit is None
    assert "not a Triton kernel" in " ".join(records[2].experiments)


def test_an_impure_v1_is_rejected_in_leaderboard_mode_too(tmp_path: Path) -> None:
    agent = FakeAgent(script=SCRIPT, torch_only=frozenset({("v1", "1")}))
    _, root, evaluated = campaign(tmp_path, agent, "leaderboard")
    records = read_version_records(root)
    assert records[1].kind == "v1" and records[1].decision == "policy_rejected" and records[1].commit is None
    assert records[1].quality_gate.checks == {"framework_purity": False}
    assert "torch.softmax" in records[1].reason
    assert str(CampaignLayout(root).v1_kernel) not in evaluated


def test_production_review_rejects_an_impure_candidate_without_the_reviewer_agent(tmp_path: Path) -> None:
    # V1 is pure (reviewed by the agent); episode 1 trial 1 is impure: no agent review of it
    agent = FakeAgent(script=SCRIPT, torch_only=frozenset({("1", "1")}))
    _, root, _ = campaign(tmp_path, agent, "production")
    reviewed = [(r.labels["episode"], r.labels["trial"]) for r in agent.runs if r.role == "policy_reviewer"]
    assert ("1", "1") not in reviewed and ("v1", "1") in reviewed
    assert read_version_records(root)[2].decision == "promoted"
    decisions = {(d.episode, d.kind): d for d in Ledger(root / "records" / "ledger.sqlite").decisions()}
    assert decisions[(0, "policy_trial1")].decision == "pass"


class TritonOnlyAgent(FakeAgent):
    """Asked to convert to Gluon, it hands back a Triton kernel (what the purity gate must catch)."""

    def run(self, run, on_tokens=None):  # type: ignore[no-untyped-def]
        result = super().run(run, on_tokens)
        if run.role == "implementer" and run.labels.get("framework") == "gluon":
            episode, trial = run.labels["episode"], run.labels.get("trial", "1")
            status, latency = self.script[episode][trial]
            (run.cwd / "kernel.py").write_text(fake_kernel(status, latency, "still triton", "triton"))
        return result


def test_a_gluon_conversion_that_keeps_triton_kernels_is_rejected_unevaluated(tmp_path: Path) -> None:
    # episode 1 stalls (slower), so episode 2 converts to Gluon: its kernel is still @triton.jit
    agent = TritonOnlyAgent(script={"1": {"1": ("PASS", 110.0)}, "2": {"1": ("PASS", 90.0)}})
    op = write_fake_operator(tmp_path / "op")
    config = CampaignConfig(
        op_dir=str(op), agent_cli="fake", platform="H200", workspace=str(tmp_path / "ws"), max_iters=2,
        fast_episodes=1, fast_trials=1, convert_after=1, max_stall=5, reviewers=[],
    )
    context = make_context(config)
    context.agent = agent
    outcome = run_campaign(config, context, progress=Progress.for_terminal(quiet=True))
    records = read_version_records(Path(outcome.values["workspace_root"]))
    decisions = [(r.framework, r.decision) for r in records[1:]]
    assert decisions == [("triton", "rejected"), ("gluon", "policy_rejected")]
    assert "the kernels are @triton.jit, not @gluon.jit" in records[2].reason
    assert not outcome.values["gluon_locked"]


def test_a_cuda_trial_whose_work_is_an_aten_op_is_rejected_and_a_cuda_kernel_promoted(tmp_path: Path) -> None:
    agent = FakeAgent(script=SCRIPT, torch_only=frozenset({("1", "1")}))
    outcome, root, evaluated = campaign(tmp_path, agent, "leaderboard", framework="cuda")
    records = read_version_records(root)
    assert [(r.decision, r.framework) for r in records] == [
        ("baseline", "pytorch"), ("pinned", "cuda"), ("promoted", "cuda")]
    assert "kernel.cu:4: ATen op torch::softmax(...) does the work" in outcome.values["trials"][0].message
    assert str(CampaignLayout(root).trial_kernel(1, 1)) not in evaluated
    frozen = CampaignLayout(root).frozen_version(2)
    assert sorted(p.name for p in frozen.iterdir()) == ["kernel.cu", "solution.json"]
