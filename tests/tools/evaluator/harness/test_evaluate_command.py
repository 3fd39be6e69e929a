"""`python -m aka_graph evaluate OP_DIR KERNEL`: exit codes, the table on stderr, JSON with --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, SOL_FIXTURES
from tests.tools.evaluator.harness.test_gates import BATCH1, HONEST_DPS


def _evaluate(*args: str, tmpdir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmpdir)} if tmpdir else None
    return subprocess.run(
        [sys.executable, "-m", "aka_graph", "evaluate", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.mark.slow
def test_a_passing_kernel_file_exits_0_with_json_on_stdout_and_the_table_on_stderr(tmp_path: Path) -> None:
    kernel = tmp_path / "kernel.py"
    kernel.write_text(HONEST_DPS)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = _evaluate(
        str(SOL_FIXTURES / "rmsnorm"),
        str(kernel),
        "--shape-id",
        BATCH1,
        "--seeds",
        "1",
        "--json",
        "--device",
        "cpu",
        tmpdir=scratch,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    assert data["status"] == "PASS" and data["schema"] == "aka_graph.evaluation.v1"
    assert "lat_us" in proc.stderr and "PASS" in proc.stderr
    assert not list(scratch.glob("aka_evaluate_*"))  # its scratch result directory was removed


@pytest.mark.slow
def test_a_failing_kernel_directory_exits_1(tmp_path: Path) -> None:
    (tmp_path / "kernel.py").write_text("def run(:\n")
    proc = _evaluate(str(SOL_FIXTURES / "rmsnorm"), str(tmp_path), "--shape-id", BATCH1, "--device", "cpu")
    assert proc.returncode == 1 and "COMPILE_ERROR" in proc.stderr
    assert proc.stdout.strip() == ""  # no --json: nothing on stdout


def test_bad_arguments_exit_2_with_the_fix(tmp_path: Path) -> None:
    proc = _evaluate(str(tmp_path / "missing"), str(tmp_path))
    assert proc.returncode == 2 and "not found" in proc.stderr
    proc = _evaluate(str(SOL_FIXTURES / "rmsnorm"), str(tmp_path / "nope.py"))
    assert proc.returncode == 2 and "pass kernel.py or its directory" in proc.stderr


def test_a_command_task_directory_is_refused_with_exit_2_naming_the_command_that_takes_it() -> None:
    task = REPO_ROOT / "tests" / "fixtures" / "source_tree"
    proc = _evaluate(str(task), str(task))
    assert proc.returncode == 2
    assert "is a command task" in proc.stderr and "run --op-dir" in proc.stderr
    assert "Traceback" not in proc.stderr
