"""The command-task evaluator: the campaign's `Evaluator` (context.py) for a kernel inside a source tree.

One sandbox job per evaluation (or per interleaved comparison) holds the pristine tree with the
candidate's editable files laid over it, and the stdlib runner (`job_runner.py`). Build outputs and
stale caches are never uploaded and are deleted again before the build, so what is validated and timed
is always built from the current sources. The verdict is reached here, on the coordinator, from the
runner's facts:

- a failed or timed-out build, or one that did not produce every declared output -> COMPILE_ERROR;
- any case (every scored performance case included) not passing on every seed -> INCORRECT;
- a scored case without every declared device-side timing key -> RUNTIME_ERROR;
- a benchmark reporting an empty CUDA-graph capture -> REWARD_HACK.

`kernel_dir` is any directory holding the candidate's editable files at their tree paths (a frozen
copy, or a whole worktree: only editable files are taken from it); an editable file absent from it is
absent from the candidate.
"""

from __future__ import annotations

import json
import math
import secrets
import statistics
import sys
from pathlib import Path
from typing import Any

from aka_graph.tasks.job_runner import tree_files
from aka_graph.tasks.loader import LoadedTask, load_task
from aka_graph.tools.evaluator.evaluation import ComparisonResult, ComparisonRound
from aka_graph.tools.evaluator.evaluation_result import (
    DeviceInfo,
    EvaluationResult,
    Status,
    Summary,
    WorkloadResult,
)
from aka_graph.tools.evaluator.sandbox.job import Sandbox, SandboxJob, SandboxResult

RUNNER = Path(__file__).resolve().parent / "job_runner.py"
STOP_STATUS: dict[str, Status] = {
    "build": "COMPILE_ERROR",
    "build_timeout": "COMPILE_ERROR",
    "correctness": "INCORRECT",
    "correctness_timeout": "TIMEOUT",
    "performance": "RUNTIME_ERROR",
    "performance_timeout": "TIMEOUT",
    "tampered": "REWARD_HACK",
}


def tree_inputs(loaded: LoadedTask, candidate: Path | None, dest: str) -> dict[str, Path]:
    """The job's copy of one tree: every pristine non-editable file (scratch, build outputs and stale
    caches never), then the candidate's editable files (from `candidate`, or the pristine ones)."""
    inputs = {f"{dest}/{rel}": loaded.tree / rel for rel in loaded.harness_files()}
    source = Path(candidate) if candidate is not None else loaded.tree
    for rel in tree_files(source) if source.is_dir() else []:
        if loaded.is_editable(rel):
            inputs[f"{dest}/{rel}"] = source / rel
    return inputs


def job_spec(
    loaded: LoadedTask, trees: dict[str, str], *, seeds: int, device: str, pattern: str, repeats: int
) -> dict[str, Any]:
    task = loaded.task
    command = task.commands

    def as_dict(c: Any) -> dict[str, Any] | None:
        return None if c is None else {"argv": list(c.argv), "timeout_s": c.timeout_s}

    return {
        "trees": trees,
        "device": device,
        "editable": list(task.editable),
        "env": dict(task.env),
        "rebuild_env": dict(task.rebuild_env),
        "stale_paths": list(task.stale_paths),
        "scratch": list(task.scratch),
        "build_outputs": list(task.build_outputs),
        "build": as_dict(command.build),
        "correctness": as_dict(command.correctness),
        "performance": as_dict(command.performance),
        "correctness_cases": [c.params() for c in task.cases.correctness],
        "performance_cases": [c.params() for c in task.cases.performance],
        "seeds": [secrets.randbelow(2**31 - 1) + 1 for _ in range(max(1, seeds))],
        "pattern": pattern,
        "repeats": repeats,
        "out": "raw.json",
    }


def job_timeout(loaded: LoadedTask, trees: int, seeds: int, rounds: int) -> float:
    """A backstop above the sum of the phase limits (each phase is limited by the runner itself)."""
    c = loaded.task.commands
    per_case = 1 if "{cases}" in " ".join(c.correctness.argv) else len(loaded.task.all_cases)
    total = trees * ((c.build.timeout_s if c.build else 0) + seeds * per_case * c.correctness.timeout_s)
    per_bench = 1 if "{cases}" in " ".join(c.performance.argv) else len(loaded.task.cases.performance)
    return total + rounds * per_bench * c.performance.timeout_s + 120


def run_job(
    sandbox: Sandbox,
    loaded: LoadedTask,
    kernels: dict[str, Path | None],
    results_dir: Path,
    *,
    seeds: int,
    device: str,
    pattern: str,
    repeats: int,
    gpu_index: int | None,
    label: str,
    stop_after: str | None = None,
) -> tuple[dict[str, Any] | None, SandboxResult, list[int]]:
    """Run the job; (the runner's raw facts or None, the sandbox result, the correctness seeds)."""
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    trees = {name: f"trees/{name}" for name in kernels}
    spec = job_spec(loaded, trees, seeds=seeds, device=device, pattern=pattern, repeats=repeats)
    spec["stop_after"] = stop_after
    spec_path = results_dir / "task_job.json"
    spec_path.write_text(json.dumps(spec, indent=1))
    inputs: dict[str, Path] = {"task_runner.py": RUNNER, "task_job.json": spec_path}
    for name, kernel in kernels.items():
        inputs.update(tree_inputs(loaded, kernel, trees[name]))
    python = sys.executable if getattr(sandbox, "name", "local") == "local" else "python3"
    job = SandboxJob(
        argv=[python, "task_runner.py", "task_job.json"],
        inputs=inputs,
        sync_back=["raw.json"],
        timeout_s=job_timeout(loaded, len(kernels), len(spec["seeds"]), len(pattern) * repeats),
        env={},
        gpu_index=gpu_index,
        exclusive_gpu=device != "cpu",
        label=label,
    )
    result = sandbox.run(job, results_dir)
    raw_path = result.synced.get("raw.json")
    seeds_used = list(spec["seeds"])
    if raw_path is None or not Path(raw_path).is_file():
        return None, result, seeds_used
    try:
        return json.loads(Path(raw_path).read_text()), result, seeds_used
    except json.JSONDecodeError:
        return None, result, seeds_used


def _diagnose(result: SandboxResult) -> str:
    failure = result.environment_failure
    if failure is not None:
        return f"environment failure at {failure.stage}: {failure.diagnostic}"
    if result.timed_out:
        return f"the task job timed out after {result.wall_s:.0f} s"
    return f"the task runner wrote no raw.json (exit {result.exit_code}): {result.stderr[-1500:]}"


def infra_error(message: str) -> EvaluationResult:
    return EvaluationResult(
        status="INFRA_ERROR",
        kernel_sha256="",
        device=DeviceInfo(name="unknown", arch="unknown"),
        timing_method="none",
        authoritative=False,
        message=message[-4000:],
    )


def tree_result(
    loaded: LoadedTask, raw: dict[str, Any], label: str, seeds: list[int], stop_after: str | None = None
) -> EvaluationResult:
    """One tree's facts (and its benchmark rounds) -> an `EvaluationResult`."""
    task = loaded.task
    facts = raw["trees"][label]
    device = raw["device"]
    method = "host_interpreter" if device == "cpu" else task.performance.method
    base = dict(
        kernel_sha256=facts["sha256"],
        device=DeviceInfo(**raw["device_info"]),
        timing_method=method,
        authoritative=device != "cpu",
        seeds=seeds,
        operator=task.name,
        phases_s=phase_times(facts),
    )
    stopped = facts.get("stopped")
    if stopped:
        status = STOP_STATUS.get(stopped, "RUNTIME_ERROR")
        workloads = checked_workloads(loaded, facts) if stopped == "correctness" else []
        return EvaluationResult(status=status, workloads=workloads, message=_stop_message(facts), **base)
    if stop_after == "build":
        return EvaluationResult(status="PASS", message="built fresh (not validated, not timed)", **base)
    problems, rejected = unvalidated(loaded, facts, seeds), False
    if stop_after == "correctness":
        status = "INCORRECT" if problems else "PASS"
        text = "; ".join(problems) or f"built fresh; {len(task.all_cases)} cases correct (not timed)"
        return EvaluationResult(status=status, message=text, **base)
    rounds = [r for r in raw["rounds"] if r["label"] == label]
    workloads = []
    for case in task.cases.performance:
        times, problem = case_times(loaded, [r["cases"].get(case.id) for r in rounds], device)
        if problem:
            rejected |= "empty CUDA-graph capture" in problem
            problems.append(f"{case.id}: {problem}")
        latency = statistics.median(times) if times else None
        spread = (statistics.pstdev(times) / statistics.mean(times) * 100) if len(times) > 1 else None
        errors = [v.get("max_abs_error") for v in facts["correctness"].get(case.id, [])]
        errors = [e for e in errors if e is not None]
        workloads.append(
            WorkloadResult(
                id=case.id,
                status="PASS" if times and not problem else "RUNTIME_ERROR",
                latency_us=latency,
                spread_pct=spread,
                timing_method=method,
                max_abs_error=max(errors) if errors else None,
                message=problem or "",
            )
        )
    if problems:
        status: Status = (
            "REWARD_HACK"
            if rejected
            else ("INCORRECT" if any("not validated" in p for p in problems) else "RUNTIME_ERROR")
        )
        return EvaluationResult(
            status=status, workloads=workloads, message="; ".join(problems)[:4000], **base
        )
    latencies = [w.latency_us for w in workloads if w.latency_us]
    geomean = math.exp(sum(math.log(x) for x in latencies) / len(latencies))
    checked = len(task.all_cases)
    return EvaluationResult(
        status="PASS",
        workloads=workloads,
        summary=Summary(objective=geomean, geomean_latency_us=geomean),
        message=f"built fresh; {checked} cases correct on {len(seeds)} seeds",
        **base,
    )


def checked_workloads(loaded: LoadedTask, facts: dict[str, Any]) -> list[WorkloadResult]:
    """The scored cases' correctness outcomes when correctness stopped the evaluation (no times)."""
    workloads = []
    for case in loaded.task.cases.performance:
        verdicts = facts["correctness"].get(case.id, [])
        if not verdicts:  # never reached: correctness stopped at an earlier case or seed
            continue
        failed = [v for v in verdicts if not v["passed"]]
        errors = [v["max_abs_error"] for v in verdicts if v.get("max_abs_error") is not None]
        status: Status = "INCORRECT" if failed else "PASS"
        workloads.append(
            WorkloadResult(
                id=case.id,
                status=status,
                max_abs_error=max(errors) if errors else None,
                message=failed[0]["note"] if failed else "",
            )
        )
    return workloads


def phase_times(facts: dict[str, Any]) -> dict[str, float]:
    """Wall seconds spent in each phase (build, correctness, performance) of one tree."""
    times: dict[str, float] = {}
    for phase in facts["phases"]:
        times[phase["phase"]] = round(times.get(phase["phase"], 0.0) + phase["wall_s"], 3)
    return times


def unvalidated(loaded: LoadedTask, facts: dict[str, Any], seeds: list[int]) -> list[str]:
    """Cases (every scored performance case included) that did not pass correctness on every seed."""
    problems = []
    for case in loaded.task.all_cases:
        passed_seeds = {v["seed"] for v in facts["correctness"].get(case.id, []) if v["passed"]}
        if not set(seeds) <= passed_seeds:
            problems.append(f"{case.id}: not validated for correctness on every seed")
    return problems


def case_times(loaded: LoadedTask, outputs: list[Any], device: str) -> tuple[list[float], str]:
    """The scored case's times in µs from each round's benchmark output, or the reason there are none."""
    perf = loaded.task.performance
    times = []
    for output in outputs:
        if not isinstance(output, dict):
            return [], "the benchmark reported nothing for this case"
        missing = [k for k in perf.timing_keys if not _positive_number(output.get(k))]
        if missing:
            return [], f"device-side timing key(s) {', '.join(missing)} missing or not a positive number"
        if perf.capture_key is not None:
            captured = output.get(perf.capture_key)
            if captured is not None and (not isinstance(captured, int | float) or captured <= 0):
                return [], f"empty CUDA-graph capture ({perf.capture_key} = {captured!r}): nothing was timed"
            if captured is None and device != "cpu":
                return [], f"the benchmark did not report {perf.capture_key} (kernels captured in the graph)"
        times.append(float(output[perf.timing_keys[0]]) * loaded.task.unit_to_us)
    if not times:
        return [], "the benchmark was never run for this case"
    return times, ""


def round_latencies(loaded: LoadedTask, outputs: dict[str, Any]) -> dict[str, float]:
    """{case id: µs} of one benchmark round (cases without a valid primary timing left out)."""
    key = loaded.task.performance.timing_keys[0]
    return {
        cid: float(out[key]) * loaded.task.unit_to_us
        for cid, out in outputs.items()
        if isinstance(out, dict) and _positive_number(out.get(key))
    }


def _positive_number(value: Any) -> bool:
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    )


def _stop_message(facts: dict[str, Any]) -> str:
    last = facts["phases"][-1] if facts["phases"] else {}
    detail = (last.get("stderr_tail") or last.get("stdout_tail") or "")[-1500:]
    return f"{facts['message']}" + (f"\n{detail}" if detail else "")


class CommandTaskEvaluator:
    """`context.Evaluator` for command tasks: `op_dir` is the task file (or its directory)."""

    def evaluate(
        self,
        sandbox: Sandbox,
        op_dir: Path,
        kernel_dir: Path | None,
        results_dir: Path,
        *,
        seeds: int,
        timeout_s: float,
        gpu_index: int | None,
        device: str,
        private_shapes: bool = False,
        stop_after: str | None = None,
    ) -> EvaluationResult:
        """Build, validate and time one tree (`stop_after` "build" or "correctness": fewer phases)."""
        del timeout_s, private_shapes  # phase limits bound the job (`job_timeout`); no private shapes here
        loaded = load_task(op_dir)
        raw, result, run_seeds = run_job(
            sandbox,
            loaded,
            {"A": kernel_dir},
            results_dir,
            seeds=seeds,
            device=device,
            pattern="A",
            repeats=1,
            gpu_index=gpu_index,
            label="task-evaluate",
            stop_after=stop_after,
        )
        if raw is None or result.is_environment_failure:
            return infra_error(_diagnose(result))
        return tree_result(loaded, raw, "A", run_seeds, stop_after)

    def compare(
        self,
        sandbox: Sandbox,
        op_dir: Path,
        kernels: dict[str, Path],
        results_dir: Path,
        *,
        pattern: str,
        repeats: int,
        seeds: int,
        timeout_s: float,
        gpu_index: int | None,
        device: str,
        private_shapes: bool = False,
    ) -> ComparisonResult:
        """Both builds in one job, each in its own tree; their benchmark runs alternate as `pattern`."""
        del timeout_s, private_shapes
        loaded = load_task(op_dir)
        unknown = set(pattern) - set(kernels)
        if unknown:
            raise ValueError(f"pattern {pattern!r} names {sorted(unknown)}, not among {sorted(kernels)}")
        raw, result, run_seeds = run_job(
            sandbox,
            loaded,
            dict(kernels),
            results_dir,
            seeds=seeds,
            device=device,
            pattern=pattern,
            repeats=repeats,
            gpu_index=gpu_index,
            label="task-compare",
        )
        if raw is None or result.is_environment_failure:
            return ComparisonResult(
                status="INFRA_ERROR",
                timing_method="none",
                authoritative=False,
                message=_diagnose(result)[-4000:],
            )
        results = {label: tree_result(loaded, raw, label, run_seeds) for label in kernels}
        rounds = [
            ComparisonRound(
                label=r["label"],
                repeat=r["repeat"],
                position=r["position"],
                latency_us=round_latencies(loaded, r["cases"]),
            )
            for r in raw["rounds"]
        ]
        failed = {label: r for label, r in results.items() if r.status != "PASS"}
        any_result = next(iter(results.values()))
        status: Status = "PASS" if not failed else next(iter(failed.values())).status
        message = "; ".join(f"{label}: {r.status} {r.message[:300]}" for label, r in failed.items())
        return ComparisonResult(
            status=status,
            timing_method=any_result.timing_method,
            authoritative=any_result.authoritative,
            kernels=results,
            rounds=rounds if not failed else [],
            message=message,
        )
