"""submission.json for a command task (aka_graph/tasks/submission.py): the incumbent's editable files at
their tree paths, in the shape of an operator's submission, and nothing of the task's cases."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aka_graph.tasks.campaign import freeze_editable
from aka_graph.tasks.loader import load_task
from aka_graph.tasks.submission import build_task_submission, write_task_submission
from aka_graph.tools.records.submission import SubmissionError
from tests.tasks.conftest import FIXTURE, VARIANTS


def test_a_command_task_submission_inlines_the_editable_files(tmp_path: Path) -> None:
    loaded = load_task(FIXTURE / "aka_task_private.toml")
    frozen = freeze_editable(loaded, loaded.tree, tmp_path / "v1")
    shutil.copyfile(VARIANTS / "triton_ops_fast.py", frozen / "minikern" / "triton_ops.py")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / ".aka_campaign.json").write_text(json.dumps({"platform": "H200"}))
    path = write_task_submission(tmp_path / "ws", loaded.path, frozen)
    submission = json.loads(path.read_text())
    assert path == tmp_path / "ws" / "submission.json"
    assert submission["name"] == "minikern_private_aka_graph"
    assert submission["definition"] == "minikern_private"
    spec = submission["spec"]
    assert spec["languages"] == ["cpp", "triton"] and spec["entry_point"] == "aka_task_private.toml"
    assert spec["target_hardware"] == ["H200"]
    assert spec["command_task"]["editable"] == ["minikern/triton_ops.py", "csrc/*.cpp"]
    assert spec["command_task"]["commands"]["performance"][1] == "bench/bench.py"
    assert [s["path"] for s in submission["sources"]] == ["csrc/native.cpp", "minikern/triton_ops.py"]
    assert submission["sources"][1]["content"] == (VARIANTS / "triton_ops_fast.py").read_text()
    text = path.read_text()
    assert not any(case in text for case in ("smoke_k5q", "ragged_m9x", "scored_q3z", "1109", "1237"))


def test_only_editable_files_are_submitted_and_some_must_be_there(tmp_path: Path) -> None:
    loaded = load_task(FIXTURE)
    candidate = tmp_path / "worktree_tree"
    shutil.copytree(loaded.tree, candidate)  # a whole tree: harness files are not part of the candidate
    paths = [s["path"] for s in build_task_submission(FIXTURE, candidate)["sources"]]
    assert paths == ["csrc/native.cpp", "minikern/triton_ops.py"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(SubmissionError, match="none of the task's editable files"):
        build_task_submission(FIXTURE, tmp_path / "empty")
