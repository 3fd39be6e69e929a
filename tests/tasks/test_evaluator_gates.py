"""The command evaluator's gates on small stdlib-only tasks (fast): device-side timing keys required, an
empty CUDA-graph capture rejected, a build that does not produce its outputs failed, and rebuild
variables scoped to the build subprocess (forced there, never leaking)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aka_graph.tasks import job_runner
from aka_graph.tasks.evaluator import CommandTaskEvaluator, job_spec
from aka_graph.tasks.loader import load_task
from tests.tasks.conftest import write_tiny_task

GOOD_BENCH = '{"device_us": c["n"] / 1000, "graph_kernels": 1}'
ENV_PROBE = 'print("ENV", __import__("json").dumps({"TINY_REBUILD": os.environ.get("TINY_REBUILD")}))'


def evaluate(sandbox, task: Path, results: Path, candidate: Path | None = None):
    return CommandTaskEvaluator().evaluate(
        sandbox, task, candidate, results, seeds=2, timeout_s=600, gpu_index=None, device="cpu"
    )


def seen(results: Path, phase: str) -> list[dict]:
    """What TINY_REBUILD was in every command of `phase`, from the job's own output."""
    raw = json.loads((results / "raw.json").read_text())
    values = []
    for entry in raw["trees"]["A"]["phases"]:
        if entry["phase"] == phase:
            line = next(x for x in entry["stdout_tail"].splitlines() if x.startswith("ENV "))
            values.append(json.loads(line[4:]))
    assert values, f"no {phase} output"
    return values


def test_pass_empty_capture_and_missing_device_key(sandbox, tmp_path: Path) -> None:
    good = evaluate(sandbox, write_tiny_task(tmp_path / "good", bench_output=GOOD_BENCH), tmp_path / "r1")
    assert good.status == "PASS", good.message
    assert good.workloads[0].id == "large" and good.workloads[0].latency_us == pytest.approx(4.096)
    assert good.timing_method == "host_interpreter" and not good.authoritative

    empty = write_tiny_task(tmp_path / "empty", bench_output='{"device_us": 1.0, "graph_kernels": 0}')
    result = evaluate(sandbox, empty, tmp_path / "r2")
    assert result.status == "REWARD_HACK" and "empty CUDA-graph capture" in result.message

    host = write_tiny_task(tmp_path / "host", bench_output='{"wall_us": 1.0, "graph_kernels": 2}')
    result = evaluate(sandbox, host, tmp_path / "r3")
    assert result.status == "RUNTIME_ERROR" and "device_us" in result.message


def test_a_build_that_produces_no_declared_output_is_a_compile_error(sandbox, tmp_path: Path) -> None:
    task = write_tiny_task(
        tmp_path / "t", bench_output=GOOD_BENCH, build="raise SystemExit(0)  # 'succeeds' without building"
    )
    result = evaluate(sandbox, task, tmp_path / "r")
    assert result.status == "COMPILE_ERROR" and "out/lib.built" in result.message


def test_rebuild_variable_reaches_the_build_only_and_never_the_next_job(sandbox, tmp_path: Path) -> None:
    task = write_tiny_task(
        tmp_path / "a", bench_output=GOOD_BENCH, build=ENV_PROBE, rebuild_env='TINY_REBUILD = "1"'
    )
    result = evaluate(sandbox, task, tmp_path / "ra")
    assert result.status == "PASS", result.message
    assert seen(tmp_path / "ra", "build") == [{"TINY_REBUILD": "1"}]
    assert all(v == {"TINY_REBUILD": None} for v in seen(tmp_path / "ra", "correctness"))
    assert seen(tmp_path / "ra", "performance") == [{"TINY_REBUILD": None}]
    assert "TINY_REBUILD" not in os.environ  # never set on the coordinator

    following = write_tiny_task(tmp_path / "b", bench_output=GOOD_BENCH, build=ENV_PROBE)
    assert evaluate(sandbox, following, tmp_path / "rb").status == "PASS"
    assert seen(tmp_path / "rb", "build") == [{"TINY_REBUILD": None}]


def test_rebuild_variable_is_forced_over_an_inherited_value(tmp_path: Path) -> None:
    """Runner level: the job's own environment says TINY_REBUILD=0; the build still gets 1, and the
    correctness and benchmark commands get no TINY_REBUILD at all."""
    root = write_tiny_task(
        tmp_path / "t", bench_output=GOOD_BENCH, build=ENV_PROBE, rebuild_env='TINY_REBUILD = "1"'
    )
    loaded = load_task(root)
    job = tmp_path / "job"
    (job / "trees").mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-r", str(loaded.tree), str(job / "trees" / "A")], check=True)
    spec = job_spec(loaded, {"A": "trees/A"}, seeds=1, device="cpu", pattern="A", repeats=1)
    (job / "spec.json").write_text(json.dumps(spec))
    env = {**os.environ, "TINY_REBUILD": "0"}
    subprocess.run([sys.executable, job_runner.__file__, "spec.json"], cwd=job, env=env, check=True)
    raw = json.loads((job / "raw.json").read_text())
    outputs = {p["phase"]: p["stdout_tail"] for p in raw["trees"]["A"]["phases"]}
    assert 'ENV {"TINY_REBUILD": "1"}' in outputs["build"]
    assert 'ENV {"TINY_REBUILD": null}' in outputs["correctness"]
    assert 'ENV {"TINY_REBUILD": null}' in outputs["performance"]


def test_a_candidate_that_rewrites_the_incumbents_tree_is_caught(sandbox, tmp_path: Path) -> None:
    """Both trees share the comparison's job: the candidate's benchmark run rewrites the incumbent's
    source (to slow it down); the audit voids the candidate, so nothing can be promoted."""
    task = write_tiny_task(tmp_path / "t", bench_output=GOOD_BENCH)
    incumbent, candidate = tmp_path / "inc", tmp_path / "cand"
    incumbent.mkdir()
    candidate.mkdir()
    (incumbent / "lib.py").write_text("VALUE = 2\n")
    (candidate / "lib.py").write_text(
        "VALUE = 2\n\n\ndef on_bench():\n    import pathlib\n"
        "    pathlib.Path('../A/lib.py').write_text('VALUE = 2  # slowed down\\n')\n"
    )
    comparison = CommandTaskEvaluator().compare(
        sandbox,
        task,
        {"A": incumbent, "B": candidate},
        tmp_path / "r",
        pattern="ABBA",
        repeats=1,
        seeds=1,
        timeout_s=600,
        gpu_index=None,
        device="cpu",
    )
    assert comparison.kernels["A"].status == "PASS"
    assert comparison.kernels["B"].status == "REWARD_HACK"
    assert "changed tree A: lib.py" in comparison.kernels["B"].message
    assert comparison.status == "REWARD_HACK" and comparison.rounds == []
