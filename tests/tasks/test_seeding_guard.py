"""Seeding a campaign from an existing tree, and the harness guard."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import git

from aka_graph.tasks.guard import HarnessGuard
from aka_graph.tasks.loader import load_task
from aka_graph.tasks.seeding import fill_worktree, seed_workspace
from tests.tasks.conftest import VARIANTS


def campaign_repo(path: Path) -> git.Repo:
    repo = git.Repo.init(path, initial_branch="campaign")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "t")
        cw.set_value("user", "email", "t@t")
    (path / "README").write_text("campaign\n")
    repo.git.add("README")
    repo.git.commit("-q", "-m", "init")
    return repo


def test_seed_copies_the_tree_without_its_git_and_tracks_only_editable_files(
    minikern: Path, tmp_path: Path
) -> None:
    tree = minikern / "tree"
    subprocess.run(["git", "init", "-q", str(tree)], check=True)  # the tree's own history
    (tree / ".git" / "marker").write_text("theirs")
    loaded = load_task(minikern)
    repo = campaign_repo(tmp_path / "ws")
    seeded = seed_workspace(loaded, tmp_path / "ws")
    assert seeded.method in ("cp --reflink=auto", "copytree")
    assert not (seeded.path / ".git").exists()
    assert (seeded.path / "bench" / "bench.py").read_bytes() == (tree / "bench" / "bench.py").read_bytes()
    tracked = sorted(repo.git.ls_files().splitlines())
    assert tracked == ["README", "tree/csrc/native.cpp", "tree/minikern/triton_ops.py"]
    assert not repo.is_dirty(untracked_files=True)  # the rest of the copy is ignored, not untracked noise
    assert seed_workspace(loaded, tmp_path / "ws").commit is None  # idempotent

    # an episode worktree: git gives the editable files, the workspace's copy everything else
    repo.git.worktree("add", "-q", "-b", "episode/1", str(tmp_path / "wt"), "campaign")
    (tmp_path / "wt" / "tree" / "csrc" / "native.cpp").write_text("// edited\n")
    fill_worktree(seeded.path, tmp_path / "wt")
    assert (tmp_path / "wt" / "tree" / "tests" / "check.py").is_file()
    assert (tmp_path / "wt" / "tree" / "csrc" / "native.cpp").read_text() == "// edited\n"
    assert git.Repo(tmp_path / "wt").git.status("--porcelain").splitlines() == [" M tree/csrc/native.cpp"]


def test_guard_catches_reverts_and_records_a_harness_edit(minikern: Path, tmp_path: Path) -> None:
    loaded = load_task(minikern)
    work = tmp_path / "work"
    shutil.copytree(loaded.tree, work)
    guard = HarnessGuard(loaded)
    before = guard.snapshot(work)
    assert "bench/bench.py" in before and "minikern/triton_ops.py" not in before

    # honest work: an editable file, a local build's outputs and caches -> nothing to report
    shutil.copyfile(VARIANTS / "triton_ops_fast.py", work / "minikern" / "triton_ops.py")
    (work / "build" / "temp").mkdir(parents=True)
    (work / "build" / "temp" / "native.o").write_bytes(b"\0")
    (work / "minikern" / "_native.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\0")
    (work / "minikern" / "__pycache__").mkdir()
    (work / "minikern" / "__pycache__" / "ops.cpython-311.pyc").write_bytes(b"\0")
    assert not guard.check(work, before).tampered

    # the benchmark "sped up", a conftest planted, the correctness test deleted
    shutil.copyfile(VARIANTS / "bench_tampered.py", work / "bench" / "bench.py")
    (work / "tests" / "conftest.py").write_text("import os\n")
    (work / "tests" / "check.py").unlink()
    record = tmp_path / "guard.jsonl"
    report = guard.enforce(work, before, record, episode=1, trial=2)
    assert report.modified == ["bench/bench.py"]
    assert report.added == ["tests/conftest.py"] and report.removed == ["tests/check.py"]
    assert report.reverted
    assert guard.snapshot(work) == before  # reverted to the pristine bytes
    assert (work / "minikern" / "triton_ops.py").read_bytes() == (
        VARIANTS / "triton_ops_fast.py"
    ).read_bytes()
    entry = json.loads(record.read_text())
    assert entry["trial"] == 2 and entry["modified"] == ["bench/bench.py"]
