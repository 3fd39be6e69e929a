"""The campaign's identity is resolved in one place, with one GPU health probe per sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aka_graph.context import CampaignContext
from aka_graph.runner import available_frameworks, campaign_thread_id, framework_targets
from aka_graph.state import CampaignConfig
from aka_graph.target import OperatorError, UnsupportedFramework, operator_identity, resolve_target
from aka_graph.tools.evaluator.sandbox.job import HealthReport


class CountingSandbox:
    """Answers the health probe like an H200 host (or fails the first `failures` probes) and counts."""

    name = "counting"

    def __init__(self, gpu: str = "NVIDIA H200", failures: int = 0) -> None:
        self.gpu, self.failures, self.probes = gpu, failures, 0

    def health(self) -> HealthReport:
        self.probes += 1
        if self.failures:
            self.failures -= 1
            return HealthReport(healthy=False, diagnostic="nvidia-smi: no devices")
        return HealthReport(healthy=True, device={"name": self.gpu})


def sol_operator(root: Path, name: str = "rms norm", shape: tuple[str, ...] = ("n",)) -> Path:
    root.mkdir(parents=True)
    definition = {
        "name": name,
        "axes": {"n": {"type": "var"}},
        "inputs": {"x": {"shape": list(shape), "dtype": "float32"}},
        "outputs": {"y": {"shape": list(shape), "dtype": "float32"}},
        "reference": "def run(x):\n    return x\n",
    }
    (root / "definition.json").write_text(json.dumps(definition))
    (root / "workload.jsonl").write_text(json.dumps({"uuid": "w", "axes": {"n": 4}, "inputs": {}}) + "\n")
    return root


def test_one_probe_serves_every_question_about_the_same_sandbox(tmp_path: Path) -> None:
    op = sol_operator(tmp_path / "op")
    sandbox = CountingSandbox()
    context = CampaignContext(sandbox=sandbox, agent=object(), evaluator=object())
    config = CampaignConfig(op_dir=str(op), workspace=str(tmp_path))
    assert "gluon" in available_frameworks(config, context)
    assert campaign_thread_id(config, context) == "kernel_opt_rms_norm_triton_H200"
    resolve_target(config.model_copy(update={"framework": "gluon"}), sandbox)
    assert sandbox.probes == 1


def test_the_per_framework_targets_come_from_one_resolution_and_need_none_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import aka_graph.tools.evaluator.harness.loading as loading

    loads: list[Path] = []
    real_load = loading.load_operator
    monkeypatch.setattr(loading, "load_operator", lambda op_dir: loads.append(op_dir) or real_load(op_dir))
    op = sol_operator(tmp_path / "op")
    sandbox = CountingSandbox()
    config = CampaignConfig(op_dir=str(op), workspace=str(tmp_path))
    targets = framework_targets(config, CampaignContext(sandbox=sandbox, agent=object(), evaluator=object()))
    assert [t.framework for t in targets] == list(targets[0].frameworks) and len(targets) > 1
    assert len(loads) == 1 and sandbox.probes == 1
    for target in targets:  # each campaign's context, seeded with its target, resolves nothing again
        seeded = CampaignContext(sandbox=sandbox, agent=object(), evaluator=object(), target=target)
        framework_config = config.model_copy(update={"framework": target.framework})
        assert seeded.target_for(framework_config) is target
    assert len(loads) == 1 and sandbox.probes == 1


def test_a_failed_probe_is_asked_again_rather_than_remembered(tmp_path: Path) -> None:
    op = sol_operator(tmp_path / "op")
    sandbox = CountingSandbox(failures=1)
    config = CampaignConfig(op_dir=str(op), platform="H200")
    assert resolve_target(config, sandbox).arch == "sm_90"  # the configured platform decides meanwhile
    assert resolve_target(config.model_copy(update={"platform": None}), sandbox).platform == "H200"
    assert sandbox.probes == 2


def test_the_context_keeps_its_target_only_for_the_campaign_it_was_resolved_for(tmp_path: Path) -> None:
    op = sol_operator(tmp_path / "op")
    context = CampaignContext(sandbox=CountingSandbox(), agent=object(), evaluator=object())
    triton = context.target_for(CampaignConfig(op_dir=str(op), platform="H200"))
    assert context.target_for(CampaignConfig(op_dir=str(op), platform="H200")) is triton
    gluon = context.target_for(CampaignConfig(op_dir=str(op), platform="H200", framework="gluon"))
    assert gluon.framework == "gluon" and gluon.dir_name == "kernel_opt_rms_norm_gluon_H200"
    production = context.target_for(
        CampaignConfig(op_dir=str(op), platform="H200", optimization_mode="production")
    )
    assert production.dir_name.endswith("_production")


def test_an_unsupported_framework_names_the_choices(tmp_path: Path) -> None:
    op = sol_operator(tmp_path / "op")
    with pytest.raises(UnsupportedFramework, match="choose one of triton"):
        resolve_target(
            CampaignConfig(op_dir=str(op), platform="cpu", framework="gluon"), CountingSandbox(gpu="cpu")
        )


def test_the_operator_format_is_told_by_its_files(tmp_path: Path) -> None:
    assert operator_identity(sol_operator(tmp_path / "sol")) == ("rms_norm", "sol")
    native = tmp_path / "rms_norm_native"
    native.mkdir()
    (native / "reference.py").write_text("class Model: ...\n")
    (native / "input.py").write_text("")
    assert operator_identity(native) == ("rms_norm_native", "native")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "definition.json").write_text("[1]")
    (tmp_path / "bad" / "workload.jsonl").write_text("")
    with pytest.raises(OperatorError, match="must hold a JSON object"):
        operator_identity(tmp_path / "bad")


def test_a_malformed_operator_is_refused_before_the_campaign_starts(tmp_path: Path) -> None:
    op = sol_operator(tmp_path / "op", name="rope", shape=("n", "heads"))
    with pytest.raises(OperatorError, match="heads"):
        resolve_target(CampaignConfig(op_dir=str(op), platform="cpu"), CountingSandbox(gpu="cpu"))
