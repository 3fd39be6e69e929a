"""Coordinator side of the evaluator: the sandbox job it builds (harness + operator + kernel, never the
hidden files), a real evaluation through LocalSandbox, and INFRA_ERROR for everything that is the
environment's or the harness's fault."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.evaluation import compare_kernels, evaluate_kernel, operator_inputs
from aka_graph.tools.evaluator.sandbox.job import EnvironmentFailure, HealthReport, SandboxJob, SandboxResult
from tests.conftest import SOL_FIXTURES

BATCH1 = "864d596c-a930-4fc4-b241-02e6a06e92cb"
KERNEL = """
import torch

def run(hidden_states, weight, output):
    x = hidden_states.float()
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * weight.float()).to(output.dtype))
"""


class ScriptedSandbox:
    """A test double of the Sandbox protocol: records the job, returns a scripted outcome."""

    name = "local"

    def __init__(
        self,
        exit_code: int = 0,
        files: dict[str, str] | None = None,
        env_failure: bool = False,
        timed_out: bool = False,
    ) -> None:
        self.jobs: list[SandboxJob] = []
        self.exit_code, self.files, self.env_failure, self.timed_out = (
            exit_code,
            files or {},
            env_failure,
            timed_out,
        )

    def run(self, job: SandboxJob, results_dir: Path) -> SandboxResult:
        self.jobs.append(job)
        results_dir.mkdir(parents=True, exist_ok=True)
        synced = {}
        for name, text in self.files.items():
            (results_dir / name).write_text(text)
            synced[name] = results_dir / name
        failure = EnvironmentFailure(stage="transport", diagnostic="ssh: connection reset", at=time.time())
        return SandboxResult(
            exit_code=75 if self.env_failure else self.exit_code,
            stdout="",
            stderr="Traceback: x",
            synced=synced,
            wall_s=1.0,
            timed_out=self.timed_out,
            environment_failure=failure if self.env_failure else None,
        )

    def health(self) -> HealthReport:
        return HealthReport(healthy=True)


def test_the_job_uploads_harness_operator_and_kernel_and_asks_for_an_exclusive_gpu(tmp_path: Path) -> None:
    box = ScriptedSandbox(files={})
    kernel = tmp_path / "kernel.py"
    kernel.write_text(KERNEL)
    evaluate_kernel(
        box,
        SOL_FIXTURES / "rmsnorm",
        kernel,
        tmp_path / "out",
        seeds=4,
        shape_ids=[BATCH1],
        gpu_index=2,
        device="cuda",
    )
    job = box.jobs[0]
    assert job.argv[1:4] == ["-m", "harness", "evaluate"]
    assert job.argv[job.argv.index("--seeds") :][:2] == ["--seeds", "4"] and BATCH1 in job.argv
    assert job.inputs["harness"].name == "harness" and job.inputs["kernel/kernel.py"] == kernel
    assert set(job.inputs) >= {"op/definition.json", "op/workload.jsonl"}
    assert job.exclusive_gpu and job.gpu_index == 2 and job.sync_back == ["result.json", "refcache.json"]
    # the reference's cached latencies are carried in and out (reference_cache.py)
    assert job.env == {"PYTHONPATH": ".", "AKA_REFCACHE_FILE": "refcache.json"}
    evaluate_kernel(box, SOL_FIXTURES / "rmsnorm", kernel, tmp_path / "out", device="cpu")
    assert not box.jobs[1].exclusive_gpu  # interpreter timing is never authoritative: no GPU lock to wait for


def test_hidden_operator_files_never_enter_the_job(tmp_path: Path) -> None:
    for name in (
        "reference.py",
        "input.py",
        "shapes.json",
        "metadata.json",
        "roofline.json",
        "agent_problem.json",
    ):
        (tmp_path / name).write_text("{}")
    assert sorted(operator_inputs(tmp_path)) == ["op/input.py", "op/reference.py", "op/shapes.json"]
    sol = tmp_path / "sol"
    sol.mkdir()
    for name in ("definition.json", "workload.jsonl", "roofline.json"):
        (sol / name).write_text("{}")
    assert sorted(operator_inputs(sol)) == ["op/definition.json", "op/workload.jsonl"]


@pytest.mark.parametrize(
    ("box", "words"),
    [
        (ScriptedSandbox(env_failure=True), "environment failure at transport"),
        (ScriptedSandbox(timed_out=True, exit_code=124), "timed out"),
        (ScriptedSandbox(exit_code=1), "no readable result.json"),
        (ScriptedSandbox(files={"result.json": '{"status": "PA'}), "no readable result.json"),
        (ScriptedSandbox(files={"result.json": json.dumps({"status": "FAST"})}), "malformed result.json"),
    ],
)
def test_environment_and_harness_failures_are_infra_errors_never_scores(
    tmp_path: Path, box, words: str
) -> None:
    res = evaluate_kernel(box, SOL_FIXTURES / "rmsnorm", tmp_path, tmp_path / "out")
    assert res.status == "INFRA_ERROR" and words in res.message
    assert res.summary.objective is None and res.authoritative is False


@pytest.mark.slow
def test_a_real_evaluation_through_the_local_sandbox(tmp_path: Path) -> None:
    from aka_graph.tools.evaluator.sandbox.local import LocalSandbox

    kernel = tmp_path / "kernel.py"
    kernel.write_text(KERNEL)
    res = evaluate_kernel(
        LocalSandbox(lock_dir=tmp_path),
        SOL_FIXTURES / "rmsnorm",
        kernel,
        tmp_path / "out",
        seeds=3,
        shape_ids=[BATCH1],
        device="cpu",
    )
    assert res.status == "PASS", res.message
    assert res.kernel_sha256 == hashlib.sha256(KERNEL.encode()).hexdigest()
    assert res.timing_method == "host_interpreter" and not res.authoritative
    assert [w.id for w in res.workloads] == [BATCH1] and res.workloads[0].latency_us > 0
    assert len(res.seeds) == 3 and res.summary.objective == pytest.approx(res.workloads[0].latency_us)


@pytest.mark.slow
def test_compare_kernels_returns_abba_rounds_per_kernel(tmp_path: Path) -> None:
    from aka_graph.tools.evaluator.sandbox.local import LocalSandbox

    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(KERNEL)
    b.write_text(KERNEL.replace("x.pow(2)", "(x * x)"))
    res = compare_kernels(
        LocalSandbox(lock_dir=tmp_path),
        SOL_FIXTURES / "rmsnorm",
        {"incumbent": a, "candidate": b},
        tmp_path / "out",
        pattern="ABBA",
        repeats=1,
        seeds=1,
        shape_ids=[BATCH1],
        device="cpu",
    )
    assert res.status == "PASS", res.message
    assert [r.label for r in res.rounds] == ["incumbent", "candidate", "candidate", "incumbent"]
    assert [r.position for r in res.rounds] == [0, 1, 2, 3]
    assert set(res.kernels) == {"incumbent", "candidate"} and all(
        r.latency_us[BATCH1] > 0 for r in res.rounds
    )
    assert res.kernels["candidate"].kernel_sha256 == hashlib.sha256(b.read_bytes()).hexdigest()
