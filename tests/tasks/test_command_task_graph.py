"""A command task through the real graph (`python -m aka_graph run --op-dir <task>`): V0 is the unmodified
minikern tree; a fast episode's replay trials are a harness edit (FORBIDDEN_EDIT), a broken C++ build
(COMPILE_ERROR), a kernel wrong only at the scored shape (INCORRECT) and a faster kernel, verified AB x3
in one job and promoted; only editable files enter the campaign's git; the report and submission.json come
out as for an operator."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import git
import pytest

from aka_graph.tools.records.ledger import Ledger
from aka_graph.tools.records.memory import read_version_records
from tests.tasks.conftest import FIXTURE, VARIANTS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]  # a whole campaign: minutes


def replay_script(tmp_path: Path) -> Path:
    scripts = tmp_path / "replay"
    scripts.mkdir()
    for name in ("bench_tampered.py", "native_broken.cpp", "triton_ops_wrong_large.py", "triton_ops_fast.py"):
        shutil.copyfile(VARIANTS / name, scripts / name)
    shutil.copyfile(FIXTURE / "tree" / "csrc" / "native.cpp", scripts / "native_ok.cpp")
    turn = {"role": "implementer", "tokens": {"input": 100, "output": 20}}
    edits = {
        "1": [
            ("tree/minikern/triton_ops.py", "triton_ops_fast.py"),
            ("tree/bench/bench.py", "bench_tampered.py"),
        ],
        "2": [("tree/csrc/native.cpp", "native_broken.cpp")],
        "3": [
            ("tree/csrc/native.cpp", "native_ok.cpp"),
            ("tree/minikern/triton_ops.py", "triton_ops_wrong_large.py"),
        ],
        "4": [("tree/minikern/triton_ops.py", "triton_ops_fast.py")],
    }
    turns = [
        {**turn, "labels": {"episode": "1", "trial": t}, "edits": [{"path": p, "source": s} for p, s in e]}
        for t, e in edits.items()
    ]
    path = scripts / "replay.json"
    path.write_text(json.dumps({"schema": "aka_graph.replay.v1", "turns": turns}))
    return path


def test_command_task_campaign_through_the_graph(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "aka_graph",
            "run",
            "--op-dir",
            str(FIXTURE),
            "--platform",
            "cpu",
            "--framework",
            "triton",
            "--agent-cli",
            "replay",
            "--replay-script",
            str(replay_script(tmp_path)),
            "--max-iters",
            "1",
            "--fast-trials",
            "4",
            "--verify-repeats",
            "3",
            "--seeds",
            "2",
            "--workspace",
            str(tmp_path / "ws"),
        ],
        capture_output=True,
        text=True,
        timeout=1450,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    root = tmp_path / "ws" / "kernel_opt_minikern_scale_rows_triton_cpu"
    ledger = Ledger(root / "records" / "ledger.sqlite")
    assert [e.status for e in ledger.entries(episode=1, role="trial")] == [
        "COMPILE_ERROR",
        "INCORRECT",
        "PASS",
    ]
    assert "status=FORBIDDEN_EDIT" in done.stderr
    records = read_version_records(root)
    assert [(r.version, r.decision) for r in records] == [(0, "baseline"), (1, "promoted")]
    assert records[1].objective < records[0].objective
    repo = git.Repo(root)
    promoted = repo.git.show("--name-only", "--format=", records[1].commit).splitlines()
    assert "tree/minikern/triton_ops.py" in promoted and not any("bench" in p for p in promoted)
    assert (root / "tree/minikern/triton_ops.py").read_bytes() == (
        VARIANTS / "triton_ops_fast.py"
    ).read_bytes()
    assert not any(p.startswith("tree/bench") for p in repo.git.ls_files().splitlines())
    # it ends as an operator campaign does: a report and a submission (the incumbent's editable files)
    assert "minikern_scale_rows" in (root / "report" / "report.md").read_text()
    submission = json.loads((root / "submission.json").read_text())
    assert submission["definition"] == "minikern_scale_rows"
    assert submission["spec"]["target_hardware"] == ["cpu"]
    sources = {s["path"]: s["content"] for s in submission["sources"]}
    assert sources.keys() == {"csrc/native.cpp", "minikern/triton_ops.py"}
    assert sources["minikern/triton_ops.py"] == (VARIANTS / "triton_ops_fast.py").read_text()
    assert "submission.json" in repo.git.ls_files().splitlines()  # committed, as for an operator
