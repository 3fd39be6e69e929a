"""preprocess rejects bad input with errors that name the problem and the fix, and reopens a workspace."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from campaign_fakes import (
    FakeAgent,
    FakeSandbox,
    make_context,
    write_fake_native_operator,
    write_fake_operator,
)
from langgraph.runtime import Runtime

from aka_graph.nodes.preprocess import preprocess
from aka_graph.nodes.problem import ProblemDerivationError
from aka_graph.state import CampaignConfig, CampaignState
from aka_graph.target import OperatorError, detect_gpu, operator_identity
from aka_graph.tools.evaluator.arch import UnknownPlatformError


def run_preprocess(tmp_path: Path, op: Path, **settings: object) -> dict[str, object]:
    config = CampaignConfig(
        op_dir=str(op), agent_cli="fake", workspace=str(tmp_path / "ws"), **{"platform": "cpu", **settings}
    )
    return preprocess(CampaignState(config=config), Runtime(context=make_context(config)))


def test_sol_operator_is_identified_by_its_definition_name(tmp_path: Path) -> None:
    assert operator_identity(write_fake_operator(tmp_path / "dir", name="rms norm/v2")) == (
        "rms_norm_v2",
        "sol",
    )


def test_native_operator_is_identified_by_its_directory(tmp_path: Path) -> None:
    op = tmp_path / "rms_norm"
    op.mkdir()
    (op / "reference.py").write_text("class Model: ...\n")
    (op / "input.py").write_text("def _make_inputs(**kw): ...\n")
    assert operator_identity(op) == ("rms_norm", "native")


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "is not an operator directory"),
        ({"definition.json": "{}"}, "no workload.jsonl"),
        ({"definition.json": "{not json", "workload.jsonl": ""}, "not valid JSON"),
        ({"reference.py": ""}, "is not an operator directory"),
    ],
)
def test_bad_operator_directories_are_named_errors(
    tmp_path: Path, files: dict[str, str], message: str
) -> None:
    op = tmp_path / "op"
    op.mkdir()
    for name, text in files.items():
        (op / name).write_text(text)
    with pytest.raises(OperatorError, match=message):
        operator_identity(op)


def test_missing_operator_directory_names_the_flag(tmp_path: Path) -> None:
    with pytest.raises(OperatorError, match="--op-dir"):
        operator_identity(tmp_path / "nowhere")


def test_unknown_platform_is_an_error_listing_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(UnknownPlatformError, match="H200"):
        run_preprocess(tmp_path, write_fake_operator(tmp_path / "op"), platform="Z9000")


def test_framework_the_target_lacks_is_an_error_naming_the_choices(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"--framework cuda is not supported on cpu.*triton"):
        run_preprocess(tmp_path, write_fake_operator(tmp_path / "op"), framework="cuda")


def test_preprocess_creates_then_reopens_the_same_workspace(tmp_path: Path) -> None:
    op = write_fake_operator(tmp_path / "op")
    first = run_preprocess(tmp_path, op)
    again = run_preprocess(tmp_path, op)
    assert first == again
    root = Path(str(first["workspace_root"]))
    assert root.name == "kernel_opt_fake_op_triton_cpu" and (root / "op" / "definition.json").is_file()
    assert json.loads((root / "memory" / "live.json").read_text())["node"] == "preprocess"


def test_production_native_operator_gets_a_derived_public_problem_without_private_shapes(
    tmp_path: Path,
) -> None:
    op = write_fake_native_operator(tmp_path / "rms")
    update = run_preprocess(tmp_path, op, optimization_mode="production")
    root = Path(str(update["workspace_root"]))
    problem = json.loads((root / "op" / "agent_problem.json").read_text())
    assert problem["schema"] == "atrex.agent_problem.v1"
    assert not (root / "op" / "shapes.json").exists()
    assert (
        "private_shape"
        not in subprocess.run(["git", "log", "-p", "--all"], cwd=root, capture_output=True, text=True).stdout
    )
    assert update["tokens_spent"] == 1200 and update["agent_sessions"] == 1


def test_a_derived_problem_that_leaks_private_ids_is_refused(tmp_path: Path) -> None:
    op = write_fake_native_operator(tmp_path / "rms")
    config = CampaignConfig(
        op_dir=str(op),
        agent_cli="fake",
        workspace=str(tmp_path / "ws"),
        platform="cpu",
        optimization_mode="production",
    )
    ctx = make_context(config)
    ctx.agent = FakeAgent(forbidden_on=("problem", "leak"))
    with pytest.raises(ProblemDerivationError, match="private shape ids"):
        preprocess(CampaignState(config=config), Runtime(context=ctx))


def test_a_failed_health_probe_without_platform_is_an_error_carrying_the_probe_diagnostic() -> None:
    sandbox = FakeSandbox()
    sandbox.outage(1)
    with pytest.raises(UnknownPlatformError, match=r"health probe failed.*--platform.*fake GPU lost"):
        detect_gpu(sandbox, None)


def test_with_a_platform_a_failed_probe_defers_to_it_and_a_cpu_probe_detects_no_gpu() -> None:
    sandbox = FakeSandbox()
    sandbox.outage(1)
    assert detect_gpu(sandbox, "H200") is None
    assert detect_gpu(sandbox, None) is None  # healthy again, and the probe ran on a CPU
