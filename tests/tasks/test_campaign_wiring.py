"""The third operator kind where the campaign detects formats and picks its evaluator."""

from __future__ import annotations

from pathlib import Path

import pytest

from aka_graph.context import HarnessEvaluator, build_default_context
from aka_graph.state import CampaignConfig
from aka_graph.target import OperatorError, operator_identity
from aka_graph.tasks.evaluator import CommandTaskEvaluator
from tests.conftest import SOL_FIXTURES
from tests.tasks.conftest import FIXTURE


def test_a_task_file_or_its_directory_is_a_command_operator(tmp_path: Path) -> None:
    assert operator_identity(FIXTURE) == ("minikern_scale_rows", "command")
    assert operator_identity(FIXTURE / "aka_task.toml") == ("minikern_scale_rows", "command")
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n')
    with pytest.raises(OperatorError, match="source_tree: required field is missing"):
        operator_identity(bad)


def test_the_default_context_evaluates_a_command_task_with_the_command_evaluator(monkeypatch) -> None:
    monkeypatch.delenv("AKA_GRAPH_CONTEXT_FACTORY", raising=False)
    replay = str(FIXTURE / "aka_task.toml")  # any existing file: the replay backend is not run here
    command = build_default_context(
        CampaignConfig(op_dir=str(FIXTURE), agent_cli="replay", replay_script=replay)
    )
    assert isinstance(command.evaluator, CommandTaskEvaluator)
    sol = build_default_context(
        CampaignConfig(op_dir=str(SOL_FIXTURES / "rmsnorm"), agent_cli="replay", replay_script=replay)
    )
    assert isinstance(sol.evaluator, HarnessEvaluator)
