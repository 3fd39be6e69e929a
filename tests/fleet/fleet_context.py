"""The context fleet test campaigns run with (`AKA_GRAPH_CONTEXT_FACTORY=fleet_context:make_context`): the
real replay agent backend with the demo operator's recorded turns, and `JudgeEvaluator`, which runs every
evaluation and comparison as a real sandbox job (`judge_job.py`) on whatever sandbox the campaign has —
in a fleet, a GPU leased from the pool of SSH hosts. Its numbers depend only on the kernels' bytes, so an
interrupted campaign must end with records identical to an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from aka_graph.context import CampaignContext
from aka_graph.state import CampaignConfig
from aka_graph.tools.evaluator.evaluation_result import DeviceInfo, EvaluationResult, Summary, WorkloadResult
from aka_graph.tools.evaluator.sandbox.job import SandboxJob

EXAMPLE = Path(__file__).resolve().parents[2] / "aka_graph" / "examples" / "vq_nearest_code"
JUDGE = Path(__file__).with_name("judge_job.py")
WORKLOAD_SCALE = [0.5, 1.0, 2.0]  # per-workload latency factors (the demo operator has three workloads)
# the demo's recorded kernels: an incorrect one, a faster one (promoted), a slower one (rejected)
LATENCIES = {"incorrect.py": ("INCORRECT", 80.0), "fast.py": ("PASS", 60.0), "slow.py": ("PASS", 90.0)}
REFERENCE = ("PASS", 100.0)  # V0, the verbatim reference wrapper


def judge_table(kernels_dir: Path) -> dict[str, Any]:
    kernels = {
        hashlib.sha256((kernels_dir / name).read_bytes()).hexdigest(): list(value)
        for name, value in LATENCIES.items()
    }
    hold_where = os.environ.get("AKA_JUDGE_HOLD_WHERE_FILE")  # while this file exists: its JSON map
    try:
        where = json.loads(Path(hold_where).read_text()) if hold_where else {}
    except FileNotFoundError:
        where = {}
    return {
        "kernels": kernels,
        "default": list(REFERENCE),
        "hold_s": float(os.environ.get("AKA_JUDGE_HOLD_S", "0.2")),
        "hold_s_where": where,
    }


class JudgeRound(BaseModel):
    label: str
    repeat: int
    position: int
    latency_us: dict[str, float]


class JudgeComparison(BaseModel):
    status: str
    timing_method: str
    authoritative: bool
    kernels: dict[str, EvaluationResult]
    rounds: list[JudgeRound] = Field(default_factory=list)
    message: str = ""


def _workload_ids(op_dir: Path) -> list[str]:
    lines = (Path(op_dir) / "workload.jsonl").read_text().splitlines()
    return [json.loads(line)["uuid"] for line in lines if line.strip()]


def _infra(message: str) -> EvaluationResult:
    return EvaluationResult(
        status="INFRA_ERROR",
        kernel_sha256="",
        device=DeviceInfo(name="?", arch="?"),
        timing_method="none",
        authoritative=False,
        message=message,
    )


class JudgeEvaluator:
    """Evaluations and comparisons as `judge_job.py` sandbox jobs (see module docstring); the recorded
    kernels are those next to the campaign's replay script."""

    def __init__(self, kernels_dir: Path) -> None:
        self.kernels_dir = kernels_dir

    def _judge(
        self, sandbox: Any, op_dir: Path, kernels: dict[str, Path], results_dir: Path, label: str
    ) -> Any:
        results_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="aka-judge-") as tmp:
            table = Path(tmp) / "table.json"
            table.write_text(json.dumps(judge_table(self.kernels_dir)))
            inputs = {"judge_job.py": JUDGE, "table.json": table}
            inputs.update({f"{name}/kernel.py": Path(path) / "kernel.py" for name, path in kernels.items()})
            job = SandboxJob(
                argv=[sys.executable, "judge_job.py", *kernels],
                inputs=inputs,
                sync_back=["result.json"],
                timeout_s=120,
                exclusive_gpu=True,
                label=label,
            )
            result = sandbox.run(job, results_dir)
        if result.is_environment_failure:
            return f"environment: {result.environment_failure.diagnostic}"
        if result.exit_code != 0 or "result.json" not in result.synced:
            return f"judge job failed (exit {result.exit_code}): {result.stderr[-500:]}"
        return json.loads(Path(result.synced["result.json"]).read_text())

    def _result(self, verdict: dict[str, Any], workloads: list[str]) -> EvaluationResult:
        status, latency = verdict["status"], float(verdict["latency_us"])
        passed = status == "PASS"
        rows = [
            WorkloadResult(id=w, status=status, latency_us=latency * f if passed else None)
            for w, f in zip(workloads, WORKLOAD_SCALE, strict=False)
        ]
        geo = latency * math.exp(sum(math.log(f) for f in WORKLOAD_SCALE[: len(rows)]) / len(rows))
        return EvaluationResult(
            status=status,
            kernel_sha256=verdict["sha256"],
            device=DeviceInfo(name="cpu", arch="cpu"),
            timing_method="host_interpreter",
            authoritative=False,
            seeds=[0],
            workloads=rows,
            summary=Summary(objective=geo, geomean_latency_us=geo) if passed else Summary(),
            message="" if passed else f"judge: {status}",
        )

    def evaluate(
        self, sandbox: Any, op_dir: Path, kernel_dir: Path, results_dir: Path, **_: Any
    ) -> EvaluationResult:
        verdict = self._judge(sandbox, op_dir, {"K": Path(kernel_dir)}, Path(results_dir), "evaluate")
        if isinstance(verdict, str):
            return _infra(verdict)
        return self._result(verdict["K"], _workload_ids(op_dir))

    def compare(
        self,
        sandbox: Any,
        op_dir: Path,
        kernels: dict[str, Path],
        results_dir: Path,
        *,
        pattern: str,
        repeats: int,
        **_: Any,
    ) -> JudgeComparison:
        verdict = self._judge(sandbox, op_dir, kernels, Path(results_dir), "compare")
        if isinstance(verdict, str):
            return JudgeComparison(
                status="INFRA_ERROR", timing_method="none", authoritative=False, kernels={}, message=verdict
            )
        results = {label: self._result(v, _workload_ids(op_dir)) for label, v in verdict.items()}
        rounds = []
        for rep in range(repeats):
            for pos, label in enumerate(pattern):
                jitter = 1.0 + 0.002 * ((rep + pos) % 3 - 1)
                lat = {w.id: w.latency_us * jitter for w in results[label].workloads if w.latency_us}
                rounds.append(JudgeRound(label=label, repeat=rep, position=pos, latency_us=lat))
        status = "PASS" if all(r.status == "PASS" for r in results.values()) else "INCORRECT"
        return JudgeComparison(
            status=status,
            timing_method="host_interpreter",
            authoritative=False,
            kernels=results,
            rounds=rounds,
        )


def make_context(config: CampaignConfig | None = None) -> CampaignContext:
    from aka_graph.cli_agents.registry import make_backend

    replay = Path(config.replay_script) if config and config.replay_script else EXAMPLE / "replay.json"
    return CampaignContext(
        agent=make_backend("replay", replay_script=replay),
        evaluator=JudgeEvaluator(replay.parent / "kernels"),
    )
