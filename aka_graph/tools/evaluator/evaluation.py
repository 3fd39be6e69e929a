"""Coordinator side of the evaluator: upload harness + operator + kernel into a sandbox job, run the
GPU-side harness there, and parse its JSON. Anything the environment or the harness gets wrong comes back
as `INFRA_ERROR` with the diagnostic, never as a score."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from aka_graph.target import HIDDEN_OPERATOR_FILES, NATIVE_CODE_FILES, NATIVE_SHAPES_FILE, operator_format
from aka_graph.tools.evaluator.evaluation_result import DeviceInfo, EvaluationResult, Status, TimingMethod
from aka_graph.tools.evaluator.reference_cache import JOB_FILE, carry_in, carry_out
from aka_graph.tools.evaluator.sandbox.gpu import needs_gpu_lock
from aka_graph.tools.evaluator.sandbox.job import Sandbox, SandboxJob, SandboxResult

HARNESS_DIR = Path(__file__).resolve().parent / "harness"
log = logging.getLogger(__name__)
NATIVE_FILES = (*NATIVE_CODE_FILES, NATIVE_SHAPES_FILE)


class ComparisonRound(BaseModel):
    label: str
    repeat: int
    position: int
    latency_us: dict[str, float] = Field(default_factory=dict, description="workload id -> µs")


class ComparisonResult(BaseModel):
    status: Status
    timing_method: TimingMethod
    authoritative: bool
    kernels: dict[str, EvaluationResult] = Field(default_factory=dict)
    rounds: list[ComparisonRound] = Field(default_factory=list)
    message: str = ""


def operator_inputs(op_dir: Path) -> dict[str, Path]:
    """What of the operator enters the job: never the hidden files (metadata.json, roofline.json)."""
    op_dir = Path(op_dir)
    if operator_format(op_dir) == "native":
        return {f"op/{name}": op_dir / name for name in NATIVE_FILES if (op_dir / name).is_file()}
    return {
        f"op/{p.name}": p
        for p in sorted(op_dir.iterdir())
        if p.name not in HIDDEN_OPERATOR_FILES and not p.name.startswith(".") and p.name != "__pycache__"
    }


def blob_inputs(op_dir: Path, blob_root: Path | None, shape_ids: list[str] | None) -> dict[str, Path]:
    """The safetensors blobs the evaluated workloads read (only those, not the whole dataset), placed in
    the job under `blobs/` as the harness's `--blob-root blobs` resolves them."""
    if blob_root is None:
        return {}
    from aka_graph.tools.evaluator.harness.blobs import blob_files
    from aka_graph.tools.evaluator.harness.loading import load_operator

    op = load_operator(Path(op_dir))
    op.blob_root = Path(blob_root)
    return {f"blobs/{rel.lstrip('/')}": path for rel, path in blob_files(op, op.select(shape_ids)).items()}


def kernel_inputs(kernel: Path) -> dict[str, Path]:
    kernel = Path(kernel)
    if kernel.is_file():
        return {"kernel/kernel.py": kernel}
    return {"kernel": kernel}


def _local(sandbox: Sandbox) -> bool:
    """Whether jobs run on this host (an unnamed sandbox is not assumed to: it keeps the GPU lock)."""
    return getattr(sandbox, "name", None) == "local"


def _python(sandbox: Sandbox) -> str:
    return sys.executable if getattr(sandbox, "name", "local") == "local" else "python3"


def _common_args(
    seeds: int,
    shape_ids: list[str] | None,
    device: str,
    private: bool,
    blobs: bool = False,
    all_workloads: bool = False,
) -> list[str]:
    args = ["--op-dir", "op", "--seeds", str(seeds), "--device", device]
    if private:  # production mode: messages must not carry the private shapes back
        args.append("--private-shapes")
    if blobs:
        args += ["--blob-root", "blobs"]
    if all_workloads:
        args.append("--all-workloads")
    for sid in shape_ids or []:
        args += ["--shape-id", sid]
    return args


def infra_error(message: str) -> EvaluationResult:
    return EvaluationResult(
        status="INFRA_ERROR",
        kernel_sha256="",
        device=DeviceInfo(name="unknown", arch="unknown"),
        timing_method="none",
        authoritative=False,
        message=message[-4000:],
    )


def _diagnose(result: SandboxResult) -> str:
    if result.environment_failure is not None:
        f = result.environment_failure
        return f"environment failure at {f.stage}: {f.diagnostic}"
    if result.timed_out:
        return f"the evaluation job timed out after {result.wall_s:.0f} s"
    return f"exit {result.exit_code}; stderr tail: {result.stderr[-1500:]}"


def _read_json(result: SandboxResult, name: str) -> dict[str, Any] | None:
    path = result.synced.get(name)
    if path is None or not Path(path).is_file():
        return None
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return None


def evaluate_kernel(
    sandbox: Sandbox,
    op_dir: Path,
    kernel_dir: Path,
    results_dir: Path,
    *,
    seeds: int = 3,
    shape_ids: list[str] | None = None,
    timeout_s: float = 900,
    gpu_index: int | None = None,
    device: str = "auto",
    private_shapes: bool = False,
    blob_root: Path | None = None,
    all_workloads: bool = False,
    warm: bool = False,
) -> EvaluationResult:
    """One full evaluation of one kernel (a kernel directory or a kernel.py file) in `sandbox`.
    `blob_root`: where workloads' safetensors paths resolve; `all_workloads`: no CPU subset; `warm`: by
    the operator's long-lived evaluator service where the sandbox can keep one (warm.py), else cold."""
    blobs = blob_inputs(op_dir, blob_root, shape_ids)
    op_files = operator_inputs(op_dir)
    common = _common_args(seeds, shape_ids, device, private_shapes, bool(blobs), all_workloads)
    if warm:
        from aka_graph.tools.evaluator.warm import ServiceKey, warm_evaluator

        key = ServiceKey(
            id(sandbox),
            str(Path(op_dir).resolve()),
            seeds,
            tuple(shape_ids or ()),
            device,
            private_shapes,
            str(blob_root or ""),
            all_workloads,
            gpu_index,
            needs_gpu_lock(device, local=_local(sandbox)),
        )
        argv = [_python(sandbox), "-m", "harness", "serve", *common]
        service = warm_evaluator(sandbox, key, argv, {"harness": HARNESS_DIR, **op_files, **blobs}, op_files)
        result = service.evaluate(Path(kernel_dir), Path(results_dir), timeout_s) if service else None
        if result is not None:
            return result
        if service is not None:
            log.warning("warm evaluator: %s; evaluating cold", service.failure)
    carried, carry_env = carry_in(op_files)  # the reference's cached latencies (reference_cache.py)
    argv = [
        _python(sandbox),
        "-m",
        "harness",
        "evaluate",
        *common,
        "--kernel-dir",
        "kernel",
        "--out",
        "result.json",
    ]
    job = SandboxJob(
        argv=argv,
        inputs={"harness": HARNESS_DIR, **op_files, **kernel_inputs(kernel_dir), **blobs, **carried},
        sync_back=["result.json", JOB_FILE],
        timeout_s=timeout_s,
        env={"PYTHONPATH": ".", **carry_env},
        gpu_index=gpu_index,
        exclusive_gpu=needs_gpu_lock(device, local=_local(sandbox)),
        label="evaluate",
    )
    result = sandbox.run(job, Path(results_dir))
    if result.is_environment_failure or result.timed_out:
        return infra_error(_diagnose(result))
    data = _read_json(result, "result.json")
    if data is None:
        return infra_error("the harness wrote no readable result.json: " + _diagnose(result))
    if data.get("status") != "INFRA_ERROR":
        carry_out(result.synced.get(JOB_FILE), op_files)
    try:
        return EvaluationResult.model_validate(data)
    except ValidationError as exc:
        return infra_error(f"malformed result.json: {exc}")


def compare_kernels(
    sandbox: Sandbox,
    op_dir: Path,
    kernels: dict[str, Path],
    results_dir: Path,
    *,
    pattern: str = "ABBA",
    repeats: int = 2,
    seeds: int = 3,
    shape_ids: list[str] | None = None,
    timeout_s: float = 900,
    gpu_index: int | None = None,
    device: str = "auto",
    private_shapes: bool = False,
    blob_root: Path | None = None,
    all_workloads: bool = False,
) -> ComparisonResult:
    """All kernels measured interleaved (`pattern`, `repeats` times) in one job on one GPU allocation."""
    blobs = blob_inputs(op_dir, blob_root, shape_ids)
    op_files = operator_inputs(op_dir)
    carried, carry_env = carry_in(op_files)  # the reference's cached latencies (reference_cache.py)
    inputs: dict[str, Path] = {"harness": HARNESS_DIR, **op_files, **blobs}
    argv = [
        _python(sandbox),
        "-m",
        "harness",
        "compare",
        *_common_args(seeds, shape_ids, device, private_shapes, bool(blobs), all_workloads),
        "--pattern",
        pattern,
        "--repeats",
        str(repeats),
        "--out",
        "compare.json",
    ]
    for n, (label, path) in enumerate(kernels.items()):
        dest = f"kernels/k{n}"
        inputs.update({f"{dest}/kernel.py": Path(path)} if Path(path).is_file() else {dest: Path(path)})
        argv += ["--kernel-dir", f"{label}={dest}"]
    job = SandboxJob(
        argv=argv,
        inputs={**inputs, **carried},
        sync_back=["compare.json", JOB_FILE],
        timeout_s=timeout_s,
        env={"PYTHONPATH": ".", **carry_env},
        gpu_index=gpu_index,
        exclusive_gpu=needs_gpu_lock(device, local=_local(sandbox)),
        label="compare",
    )
    result = sandbox.run(job, Path(results_dir))

    def failed(message: str) -> ComparisonResult:
        return ComparisonResult(
            status="INFRA_ERROR", timing_method="none", authoritative=False, message=message[-4000:]
        )

    if result.is_environment_failure or result.timed_out:
        return failed(_diagnose(result))
    data = _read_json(result, "compare.json")
    if data is None:
        return failed("the harness wrote no readable compare.json: " + _diagnose(result))
    if "kernels" not in data:  # the harness failed before measuring: it wrote an evaluation-shaped error
        return failed(str(data.get("message") or "harness failure"))
    carry_out(result.synced.get(JOB_FILE), op_files)
    try:
        return ComparisonResult.model_validate(data)
    except ValidationError as exc:
        return failed(f"malformed compare.json: {exc}")
