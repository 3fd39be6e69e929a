"""The node glue (aka_graph/tasks/campaign.py) on the campaign's real git workspace: the tree seeded once,
V0 = its editable files, an episode worktree with the whole tree, a diff classified by the editable set,
harness edits caught by the guard, and a promotion that squashes only editable files."""

from __future__ import annotations

import shutil
from pathlib import Path

from aka_graph.tasks.campaign import freeze_editable, guard_for, install_task, prepare_worktree
from aka_graph.tasks.loader import load_task
from aka_graph.tools.records.workspace import CampaignWorkspace
from tests.tasks.conftest import VARIANTS


def test_command_task_in_the_campaign_workspace(minikern: Path, tmp_path: Path) -> None:
    loaded = load_task(minikern)
    ws = CampaignWorkspace.open_or_create(tmp_path, loaded.name, "triton", "cpu", False)
    seeded = install_task(ws, loaded)
    assert ws.editable_files == ["tree/minikern/triton_ops.py", "tree/csrc/*.cpp"]
    tracked = set(ws.repo.git.ls_files().splitlines())
    assert {"tree/minikern/triton_ops.py", "tree/csrc/native.cpp", "op/aka_task.toml"} <= tracked
    assert not any(p.startswith("tree/bench") or p.startswith("tree/tests") for p in tracked)
    v0 = freeze_editable(loaded, seeded.path, tmp_path / "v0")
    assert sorted(p.relative_to(v0).as_posix() for p in v0.rglob("*") if p.is_file()) == [
        "csrc/native.cpp",
        "minikern/triton_ops.py",
    ]

    worktree = ws.create_episode(1)
    tree = prepare_worktree(ws.root, worktree)
    guard = guard_for(loaded, ws.root)
    before = guard.snapshot(tree)
    shutil.copyfile(VARIANTS / "triton_ops_fast.py", tree / "minikern" / "triton_ops.py")
    shutil.copyfile(VARIANTS / "bench_tampered.py", tree / "bench" / "bench.py")
    (worktree / "plans").mkdir(exist_ok=True)
    (worktree / "plans" / "episode_1.md").write_text("blocks of rows\n")
    report = guard.enforce(tree, before)
    assert report.modified == ["bench/bench.py"] and report.reverted
    diff = ws.candidate_diff(1)
    assert diff.editable == ["tree/minikern/triton_ops.py"] and not diff.forbidden
    trial = freeze_editable(loaded, tree, tmp_path / "t1")
    assert (trial / "minikern/triton_ops.py").read_bytes() == (VARIANTS / "triton_ops_fast.py").read_bytes()

    ws.squash_promote(1, "V1: blocks of rows")
    promoted = ws.repo.git.diff("--name-only", "HEAD~1", "HEAD").splitlines()
    assert "tree/minikern/triton_ops.py" in promoted and not any("bench" in p for p in promoted)
