"""A replay campaign over the minikern source tree, step by step as the graph runs it (V0, an episode of
trials in a worktree, evaluation of each, ABBA verification, promotion), with real components only: the
replay agent backend, git, the local sandbox, the tree's own C++ build and the Triton interpreter.

Trials: one "speeds up" the benchmark script (caught by the guard, reverted, not scored), one breaks the
C++ build (COMPILE_ERROR), one is right on every correctness case but wrong at the scored shape
(INCORRECT), and one is really faster — verified ABBA in one job and promoted.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import git
import pytest

from aka_graph.cli_agents.base import AgentRun
from aka_graph.cli_agents.replay import ReplayBackend
from aka_graph.tasks.evaluator import CommandTaskEvaluator
from aka_graph.tasks.guard import HarnessGuard
from aka_graph.tasks.loader import load_task
from aka_graph.tasks.seeding import fill_worktree, seed_workspace
from aka_graph.tools.records.verdict import decide
from tests.tasks.conftest import VARIANTS
from tests.tasks.test_seeding_guard import campaign_repo

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]  # minutes on a loaded 2-core host


def replay_script(tmp_path: Path, tree: Path) -> Path:
    scripts = tmp_path / "replay"
    scripts.mkdir()
    for name in ("bench_tampered.py", "native_broken.cpp", "triton_ops_wrong_large.py", "triton_ops_fast.py"):
        shutil.copyfile(VARIANTS / name, scripts / name)
    shutil.copyfile(tree / "csrc" / "native.cpp", scripts / "native_ok.cpp")
    turn = {"role": "implementer", "tokens": {"input": 100, "output": 20}}
    turns = [
        {
            **turn,
            "labels": {"trial": "1"},
            "edits": [
                {"path": "tree/minikern/triton_ops.py", "source": "triton_ops_fast.py"},
                {"path": "tree/bench/bench.py", "source": "bench_tampered.py"},
            ],
        },
        {
            **turn,
            "labels": {"trial": "2"},
            "edits": [{"path": "tree/csrc/native.cpp", "source": "native_broken.cpp"}],
        },
        {
            **turn,
            "labels": {"trial": "3"},
            "edits": [
                {"path": "tree/csrc/native.cpp", "source": "native_ok.cpp"},
                {"path": "tree/minikern/triton_ops.py", "source": "triton_ops_wrong_large.py"},
            ],
        },
        {
            **turn,
            "labels": {"trial": "4"},
            "edits": [{"path": "tree/minikern/triton_ops.py", "source": "triton_ops_fast.py"}],
        },
    ]
    path = scripts / "replay.json"
    path.write_text(json.dumps({"schema": "aka_graph.replay.v1", "turns": turns}))
    return path


def freeze(tree: Path, editable: list[str], dest: Path) -> Path:
    """What the campaign keeps of a trial: its editable files (a frozen copy nothing edits)."""
    for rel in editable:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tree / rel, dest / rel)
    return dest


def test_replay_campaign_over_a_source_tree(sandbox, minikern: Path, tmp_path: Path) -> None:
    loaded, evaluator = load_task(minikern), CommandTaskEvaluator()
    editable = loaded.editable_files()
    ws = tmp_path / "ws"
    repo = campaign_repo(ws)
    seeded = seed_workspace(loaded, ws)
    options = dict(timeout_s=900, gpu_index=None, device="cpu")

    # V0: the unmodified tree
    v0 = freeze(seeded.path, editable, tmp_path / "versions" / "v0")
    v0_result = evaluator.evaluate(sandbox, minikern, v0, tmp_path / "results" / "v0", seeds=2, **options)
    assert v0_result.status == "PASS", v0_result.message
    assert v0_result.phases_s.keys() == {"build", "correctness", "performance"}

    # episode 1: a worktree with the full tree, the replay agent editing it
    worktree = ws / "episodes" / "1"
    repo.git.worktree("add", "-q", "-b", "episode/1", str(worktree), "campaign")
    fill_worktree(seeded.path, worktree)
    agent, guard = ReplayBackend(replay_script(tmp_path, loaded.tree)), HarnessGuard(loaded, seeded.path)
    statuses, kept = {}, {}
    for trial in (1, 2, 3, 4):
        before = guard.snapshot(worktree / "tree")
        result = agent.run(
            AgentRun(
                role="implementer",
                prompt="make scale_rows faster",
                cwd=worktree,
                timeout_s=60,
                transcript_dir=tmp_path / "transcripts",
                labels={"episode": "1", "trial": str(trial)},
            )
        )
        assert result.ok, result.error
        report = guard.enforce(worktree / "tree", before, tmp_path / "guard.jsonl", episode=1, trial=trial)
        if report.tampered:  # recorded, reverted, not scored: the editable edits go too
            statuses[trial] = "FORBIDDEN_EDIT"
            git.Repo(worktree).git.checkout("--", *[f"tree/{rel}" for rel in editable])
            continue
        git.Repo(worktree).git.commit("-q", "-am", f"trial {trial}")
        kept[trial] = freeze(worktree / "tree", editable, tmp_path / "trials" / str(trial))
        outcome = evaluator.evaluate(
            sandbox, minikern, kept[trial], tmp_path / "results" / f"t{trial}", seeds=2, **options
        )
        statuses[trial] = outcome.status
        if trial == 3:
            assert outcome.message.startswith("incorrect on rows128 (seed")  # the small cases passed
            assert [(w.id, w.status) for w in outcome.workloads] == [("rows128", "INCORRECT")]
        if trial == 4:
            assert outcome.summary.objective < v0_result.summary.objective
    assert statuses == {1: "FORBIDDEN_EDIT", 2: "COMPILE_ERROR", 3: "INCORRECT", 4: "PASS"}
    guard_log = [json.loads(line) for line in (tmp_path / "guard.jsonl").read_text().splitlines()]
    assert [(g["trial"], g["modified"]) for g in guard_log] == [(1, ["bench/bench.py"])]
    assert (worktree / "tree" / "bench" / "bench.py").read_bytes() == (
        loaded.tree / "bench/bench.py"
    ).read_bytes()

    # verify: incumbent and candidate built side by side in ONE job, benchmarks interleaved ABBA
    comparison = evaluator.compare(
        sandbox,
        minikern,
        {"A": v0, "B": kept[4]},
        tmp_path / "results" / "verify",
        pattern="ABBA",
        repeats=3,  # df = 2: robust to a loaded host's interpreter timings
        seeds=1,
        **options,
    )
    assert comparison.status == "PASS", comparison.message
    assert [r.label for r in comparison.rounds] == list("ABBA" * 3)
    assert comparison.kernels["B"].kernel_sha256 != comparison.kernels["A"].kernel_sha256
    verdict = decide(
        comparison.rounds,
        incumbent="A",
        candidate="B",
        timing_methods={k: r.timing_method for k, r in comparison.kernels.items()},
        min_improvement_pct=2.0,
        regression_guard_pct=5.0,
    )
    assert verdict.promote, verdict.reason

    # promote: the candidate's editable files, squashed onto the campaign branch
    for rel in editable:
        shutil.copyfile(kept[4] / rel, seeded.path / rel)
    repo.git.add("--", *[f"tree/{rel}" for rel in editable])  # visible to git: editable
    repo.git.commit("-q", "-m", f"V1: {verdict.improvement_pct:.0f}% faster (ABBA x3)")
    changed = repo.git.diff("--name-only", "HEAD~1", "HEAD").splitlines()
    assert changed == ["tree/minikern/triton_ops.py"]


def test_a_stale_binary_is_never_validated(sandbox, minikern: Path, tmp_path: Path) -> None:
    """The tree holds a build of the ORIGINAL C++ source; the candidate's C++ is wrong. The tree's own
    setup.py would happily reuse the stale binary (and its test would pass); our evaluator deletes it,
    rebuilds with the rebuild variable on the build only, and finds the candidate incorrect."""
    tree = minikern / "tree"
    env = {"MINIKERN_REBUILD": "1", "PATH": "/usr/bin:/bin"}
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
    )
    shutil.copyfile(VARIANTS / "native_wrong.cpp", tree / "csrc" / "native.cpp")
    reuse = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert "reusing" in reuse.stdout
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps([{"id": "tiny", "rows": 5, "cols": 33}]))
    stale_check = subprocess.run(
        [sys.executable, "tests/check.py", "--cases", str(cases), "--device", "cpu"],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "TRITON_INTERPRET": "1"},
    )
    assert stale_check.returncode == 0, stale_check.stderr  # the stale binary passes the tree's own test

    result = CommandTaskEvaluator().evaluate(
        sandbox, minikern, tree, tmp_path / "r", seeds=1, timeout_s=900, gpu_index=None, device="cpu"
    )
    assert result.status == "INCORRECT", result.message
    assert "tiny" in result.message
