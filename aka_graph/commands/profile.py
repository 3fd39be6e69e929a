"""`python -m aka_graph profile OP_DIR KERNEL [--shape-id ID]`: profile one workload of a kernel.

Runs Nsight Compute (`--vendor nvidia`, the default) or rocprofv3 (`--vendor amd`) on the kernel in a
sandbox job and prints a short summary: the top kernels' duration, achieved DRAM bandwidth, memory and
compute throughput as % of peak, occupancy and the main stall reasons. The summary (JSON and text) and
the raw report go to `--out` (default `profiles/`, the campaign workspace's profiles directory when run
there). `--private-shapes` (production mode): the workload is named by its opaque id, grid and block
sizes are left out and no raw report is written. Exit 0 when a profile was written, 1 when the kernel
or the profiler failed, 2 on bad arguments."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer


def profile_command(
    op_dir: Annotated[Path, typer.Argument(help="SOL-ExecBench or native operator directory")],
    kernel: Annotated[Path, typer.Argument(help="kernel.py file or kernel directory")],
    shape_id: Annotated[
        str | None, typer.Option("--shape-id", help="workload id (default: the first)")
    ] = None,
    vendor: Annotated[str, typer.Option("--vendor", help="nvidia (ncu) or amd (rocprofv3)")] = "nvidia",
    reps: Annotated[int, typer.Option("--reps", help="profiled calls after the warm-up")] = 3,
    out: Annotated[Path, typer.Option("--out", help="where the summary and report go")] = Path("profiles"),
    private: Annotated[
        bool, typer.Option("--private-shapes", help="production mode: opaque id only, no raw report")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the summary JSON on stdout")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="profiling job limit, seconds")] = 900.0,
    isolation: Annotated[str, typer.Option("--isolation", help="local: auto, bwrap or none")] = "auto",
    gpu: Annotated[str | None, typer.Option("--gpu", help="local GPU index")] = None,
) -> None:
    """Profile KERNEL on one workload of OP_DIR with ncu (NVIDIA) or rocprofv3 (AMD)."""
    from pydantic import ValidationError

    from aka_graph.commands.evaluate import kernel_problem
    from aka_graph.tools.evaluator.profile import profile_kernel

    def bad(message: str) -> typer.Exit:
        typer.echo(f"aka_graph profile: {message}", err=True)
        return typer.Exit(2)

    if not op_dir.is_dir():
        raise bad(f"operator directory {op_dir} not found")
    problem = kernel_problem(kernel)
    if problem:
        raise bad(problem)
    if vendor not in ("nvidia", "amd"):
        raise bad(f"--vendor {vendor!r}: use nvidia or amd")
    if reps < 1:
        raise bad("--reps must be at least 1")
    try:
        from aka_graph.tools.evaluator.sandbox.factory import SandboxSpec, make_sandbox

        sandbox = make_sandbox(SandboxSpec(isolation=isolation, gpu_index=gpu))  # type: ignore[arg-type]
    except (ValidationError, ValueError) as exc:
        raise bad(str(exc)) from exc
    try:
        result = profile_kernel(
            sandbox,
            op_dir.resolve(),
            kernel.resolve(),
            out.resolve(),
            shape_id=shape_id,
            vendor=vendor,
            private=private,
            reps=reps,
            timeout_s=timeout,
            python=sys.executable if getattr(sandbox, "name", "local") == "local" else "python3",
        )
    finally:
        close = getattr(sandbox, "close", None)
        if close is not None:
            close()
    if not result.ok or result.summary is None:
        typer.echo(f"aka_graph profile: {result.message}", err=True)
        raise typer.Exit(1)
    typer.echo(result.summary.render(), err=True)
    for name, path in result.files.items():
        typer.echo(f"  {name}: {path}", err=True)
    if as_json:
        sys.stdout.write(json.dumps(result.summary.to_json(), indent=2) + "\n")


def register(app: typer.Typer) -> None:
    app.command("profile", help=__doc__)(profile_command)
