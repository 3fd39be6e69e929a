"""The C++ build path for real, with g++ on this CPU machine: a C++ torch-extension RMSNorm solution
(tests/fixtures/solutions/cpp_rmsnorm_cpu) evaluated end to end through `python -m harness`; the
stale-binary trap (the source edited, the entry point's PYBIND11_MODULE removed: the new code runs, bound
by the evaluator); a broken source gives a short COMPILE_ERROR with file and line; the build-time limit
stops a build and leaves no compiler behind."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.harness.languages.errors import CompileError
from aka_graph.tools.evaluator.harness.languages.solution import read_solution
from aka_graph.tools.evaluator.harness.languages.torch_ext import plan_build, run_build
from tests.conftest import REPO_ROOT
from tests.tools.evaluator.harness.test_gates import BATCH1, BATCH7, RMSNORM, run_harness

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "solutions" / "cpp_rmsnorm_cpu"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("g++") is None or shutil.which("ninja") is None, reason="needs g++, ninja"
    ),
]


def kernel_copy(tmp_path: Path, name: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(FIXTURE, dest)
    return dest


def test_cpp_extension_passes_then_an_edit_is_rebuilt_and_runs(tmp_path: Path) -> None:
    kdir = kernel_copy(tmp_path, "v1")
    first = run_harness(tmp_path / "a", RMSNORM, kdir, shape_ids=[BATCH1, BATCH7], seeds=1)
    assert first["status"] == "PASS", first["message"]
    assert all(w["status"] == "PASS" and w["latency_us"] > 0 for w in first["workloads"])

    # the trap: same file names, new code (output doubled) and no PYBIND11_MODULE of its own
    source = (kdir / "main.cpp").read_text()
    edited = source.replace("* static_cast<float>(wp[c]))", "* static_cast<float>(wp[c]) * 2.0f)")
    edited = "\n".join(line for line in edited.splitlines() if "PYBIND11_MODULE" not in line) + "\n"
    assert edited != source and "PYBIND11_MODULE" not in edited
    (kdir / "main.cpp").write_text(edited)
    second = run_harness(tmp_path / "b", RMSNORM, kdir, shape_ids=[BATCH1], seeds=1)
    assert second["kernel_sha256"] != first["kernel_sha256"]
    assert second["status"] == "INCORRECT", second["message"]  # the edited code ran: no stale binary


def test_broken_source_gives_a_short_exact_compile_error(tmp_path: Path) -> None:
    kdir = kernel_copy(tmp_path, "broken")
    lines = (kdir / "main.cpp").read_text().splitlines()
    target = next(i for i, line in enumerate(lines) if "const int64_t rows" in line)
    lines[target] = lines[target].rstrip(";")  # a missing semicolon
    (kdir / "main.cpp").write_text("\n".join(lines) + "\n")
    res = run_harness(tmp_path, RMSNORM, kdir, shape_ids=[BATCH1], seeds=1)
    assert res["status"] == "COMPILE_ERROR"
    message = res["message"]
    assert f"main.cpp:{target + 2}: error: expected" in message or f"main.cpp:{target + 1}: error:" in message
    assert len(message.splitlines()) <= 8 and "-isystem" not in message and "ninja" not in message


def test_build_time_limit_stops_the_compiler_group(tmp_path: Path) -> None:
    spec = read_solution(FIXTURE, native=False)
    import os

    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    work = tmp_path / "w"
    plan = plan_build(spec, work, env=env, device_type="cpu", torch_cuda=None, cuda_home=None)
    with pytest.raises(CompileError, match=r"longer than the 1 s build-time limit"):
        run_build(plan, work, {**os.environ, **env}, timeout_s=1.0)
    # neither the builder nor a compiler working on the staged sources is left
    leftover = subprocess.run(["pgrep", "-f", str(work)], capture_output=True, text=True)
    assert leftover.stdout.strip() == ""
