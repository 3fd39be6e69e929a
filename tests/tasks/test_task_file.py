"""The task file: loaded and checked field by field; every mistake is one line naming field and fix."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aka_graph.tasks.loader import TaskFileError, load_task
from tests.tasks.conftest import FIXTURE


def edited_task(tmp_path: Path, old: str, new: str) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "t", ignore=shutil.ignore_patterns("__pycache__", "*.so", "build"))
    path = tmp_path / "t" / "aka_task.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(TaskFileError) as info:
        load_task(path)
    return info.value.lines


def test_fixture_task_loads_with_its_editable_and_harness_files() -> None:
    loaded = load_task(FIXTURE)
    assert loaded.editable_files() == ["csrc/native.cpp", "minikern/triton_ops.py"]
    assert {"bench/bench.py", "tests/check.py", "setup.py", "minikern/ops.py"} <= set(loaded.harness_files())
    assert [c.id for c in loaded.task.all_cases] == ["tiny", "rows64", "rows128"]


def test_host_timing_key_is_refused_at_load(tmp_path: Path) -> None:
    lines = problems(edited_task(tmp_path, 'timing_keys = ["device_us"]', 'timing_keys = ["wall_us"]'))
    assert len(lines) == 1
    assert "performance.timing_keys" in lines[0] and "host or wall-clock" in lines[0]


def test_one_line_per_bad_field(tmp_path: Path) -> None:
    path = edited_task(tmp_path, 'unit = "us"', 'unit = "s"\ncolour = "red"')
    path.write_text(path.read_text().replace("timeout_s = 300", "timeout_s = -1", 1))
    lines = problems(path)
    assert len(lines) == 3, lines
    assert any("performance.unit" in line for line in lines)
    assert any("performance.colour: unknown field" in line for line in lines)
    assert any("commands.correctness.timeout_s" in line for line in lines)
    assert all(line.startswith(str(path)) for line in lines)


def test_editable_harness_and_unknown_placeholder_are_refused(tmp_path: Path) -> None:
    lines = problems(edited_task(tmp_path, '"csrc/*.cpp"]', '"csrc/*.cpp", "bench/*.py"]'))
    assert any("commands.performance: bench/bench.py is editable" in line for line in lines)
    lines = problems(edited_task(tmp_path / "b", '"--seed", "{seed}"', '"--seed", "{sed}"'))
    assert any("placeholder {sed}" in line for line in lines)


def test_rebuild_variable_may_not_be_a_runtime_variable(tmp_path: Path) -> None:
    lines = problems(edited_task(tmp_path, "[rebuild_env]", '[env]\nMINIKERN_REBUILD = "0"\n[rebuild_env]'))
    assert any("rebuild variable must reach the build only" in line for line in lines)
    lines = problems(edited_task(tmp_path / "b", 'MINIKERN_REBUILD = "1"', 'PYTHONPATH = "/evil"'))
    assert any("rebuild_env" in line and "PYTHONPATH" in line for line in lines)


def test_command_line_exits_2_with_the_problem(tmp_path: Path) -> None:
    path = edited_task(tmp_path, 'timing_keys = ["device_us"]', 'timing_keys = ["host_time_us"]')
    proc = subprocess.run(
        [sys.executable, "-m", "aka_graph.tasks", "check", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "performance.timing_keys" in proc.stderr
    ok = subprocess.run(
        [sys.executable, "-m", "aka_graph.tasks", "check", str(FIXTURE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0 and "csrc/native.cpp" in ok.stdout


def test_the_gpu_task_is_the_ci_task_scored_at_a_memory_bound_shape() -> None:
    """aka_task_h200.toml (tests/gpu/test_command_task_gpu.py) differs from the CI task only in its name
    and its scored case: tens of thousands of rows, so the H200 is bandwidth-bound, not launch-bound."""
    ci, gpu = load_task(FIXTURE), load_task(FIXTURE / "aka_task_h200.toml")
    assert gpu.tree == ci.tree and gpu.editable_files() == ci.editable_files()
    assert gpu.task.commands == ci.task.commands and gpu.task.performance == ci.task.performance
    assert gpu.task.cases.correctness == ci.task.cases.correctness
    (scored,) = gpu.task.cases.performance
    params = scored.params()
    assert params["rows"] >= 16384 and params["rows"] * params["cols"] * 4 * 2 >= 128 * 2**20  # bytes moved
