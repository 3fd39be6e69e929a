"""`python -m aka_graph evaluate OP_DIR KERNEL`: one full evaluation of one kernel in a sandbox.

Prints the harness's table on stderr and, with --json, the result JSON on stdout; exits 0 on PASS and 1
on any other status (2 on bad arguments)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer


def evaluate_command(
    op_dir: Annotated[Path, typer.Argument(help="SOL-ExecBench or native operator directory")],
    kernel: Annotated[Path, typer.Argument(help="kernel.py file or kernel directory")],
    seeds: Annotated[int, typer.Option("--seeds", help="random seeds at scale 1 (+1 at another scale)")] = 3,
    shape_id: Annotated[list[str] | None, typer.Option("--shape-id", help="only these workloads")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result JSON on stdout")] = False,
    device: Annotated[str, typer.Option("--device", help="auto, cuda or cpu")] = "auto",
    timeout: Annotated[float, typer.Option("--timeout", help="whole-evaluation limit, seconds")] = 900.0,
    results: Annotated[Path | None, typer.Option("--results", help="keep the job's result.json here")] = None,
    isolation: Annotated[str, typer.Option("--isolation", help="local: auto, bwrap or none")] = "auto",
    gpu: Annotated[str | None, typer.Option("--gpu", help="local GPU index")] = None,
    ssh: Annotated[
        str | None, typer.Option("--sandbox-ssh", help="[user@]host: evaluate on that host")
    ] = None,
    ssh_gpu: Annotated[str | None, typer.Option("--sandbox-ssh-gpu", help="GPU index on the host")] = None,
    ssh_init: Annotated[str | None, typer.Option("--sandbox-ssh-init", help="host setup command")] = None,
    runtime_bind: Annotated[
        list[str] | None, typer.Option("--sandbox-ssh-runtime-bind", "--runtime-bind", help="SRC[=DST], ro")
    ] = None,
    blob_root: Annotated[
        Path | None,
        typer.Option(
            "--blob-root",
            envvar="FLASHINFER_TRACE_DIR",  # as SOL-ExecBench's driver looks for blobs
            help="dataset directory that workloads' safetensors paths are relative to",
        ),
    ] = None,
    all_workloads: Annotated[
        bool, typer.Option("--all-workloads", help="on CPU, every workload (default: a stated subset)")
    ] = False,
) -> None:
    """Evaluate KERNEL on OP_DIR: compile, correctness on every workload, timing, speed of light."""
    from pydantic import ValidationError

    from aka_graph.tools.evaluator.evaluation import evaluate_kernel
    from aka_graph.tools.evaluator.harness.report import table

    if not op_dir.is_dir():
        typer.echo(f"aka_graph evaluate: operator directory {op_dir} not found", err=True)
        raise typer.Exit(2)
    problem = kernel_problem(kernel)
    if problem:
        typer.echo(f"aka_graph evaluate: {problem}", err=True)
        raise typer.Exit(2)
    if device not in ("auto", "cuda", "cpu"):
        typer.echo(f"aka_graph evaluate: --device {device!r}: use auto, cuda or cpu", err=True)
        raise typer.Exit(2)
    problem = operator_problem(op_dir, shape_id, blob_root)
    if problem:
        typer.echo(f"aka_graph evaluate: {problem}", err=True)
        raise typer.Exit(2)
    try:
        from aka_graph.tools.evaluator.sandbox.factory import SandboxSpec, make_sandbox

        spec = SandboxSpec(
            isolation=isolation,
            ssh_target=ssh,
            ssh_gpu=ssh_gpu,
            ssh_init=ssh_init,  # type: ignore[arg-type]
            runtime_binds=runtime_bind or [],
            gpu_index=gpu,
        )  # type: ignore[arg-type]
        sandbox = make_sandbox(spec)
    except (ValidationError, ValueError) as exc:
        typer.echo(f"aka_graph evaluate: {exc}", err=True)
        raise typer.Exit(2) from exc
    results_dir = results or Path(tempfile.mkdtemp(prefix="aka_evaluate_"))
    try:
        result = evaluate_kernel(
            sandbox,
            op_dir.resolve(),
            kernel.resolve(),
            results_dir,
            seeds=seeds,
            shape_ids=shape_id,
            timeout_s=timeout,
            device=device,
            blob_root=blob_root.resolve() if blob_root else None,
            all_workloads=all_workloads,
        )
    finally:
        close = getattr(sandbox, "close", None)
        if close is not None:
            close()
        if results is None:  # a scratch directory of ours: nothing in it is the user's
            shutil.rmtree(results_dir, ignore_errors=True)
    data = result.model_dump(by_alias=True, mode="json")
    typer.echo(table(data), err=True)
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    raise typer.Exit(0 if result.status == "PASS" else 1)


def kernel_problem(kernel: Path) -> str | None:
    """What is wrong with the KERNEL argument (None: a file or a directory, as a job copies it)."""
    if not kernel.exists():
        return f"kernel {kernel} not found; pass kernel.py or its directory"
    if not (kernel.is_file() or kernel.is_dir()):
        return f"kernel {kernel} is neither a file nor a directory; pass kernel.py or its directory"
    return None


def operator_problem(op_dir: Path, shape_ids: list[str] | None, blob_root: Path | None) -> str | None:
    """A malformed or incomplete operator, checked here before any job starts (the campaign's own check,
    torch-free, plus the blobs the selected workloads need): the file, the problem and the fix; None when
    the operator is usable."""
    from aka_graph.target import OperatorError, check_operator, operator_identity
    from aka_graph.tools.evaluator.harness.blobs import missing_blobs
    from aka_graph.tools.evaluator.harness.opmodel import OperatorError as HarnessOperatorError

    if blob_root is not None and not blob_root.is_dir():
        return f"--blob-root {blob_root}: not a directory; pass the dataset directory holding the blobs"
    try:
        op_format = operator_identity(op_dir)[1]
        if op_format == "command":
            return (
                f"{op_dir} is a command task (aka_task.toml): `evaluate` takes an operator; run a campaign "
                "on the task with `python -m aka_graph run --op-dir` instead"
            )
        op = check_operator(op_dir, op_format)
        op.blob_root = blob_root.resolve() if blob_root else None
        return missing_blobs(op, op.select(shape_ids))
    except (OperatorError, HarnessOperatorError) as exc:
        return str(exc)


def register(app: typer.Typer) -> None:
    app.command("evaluate", help=__doc__)(evaluate_command)
