"""`python -m aka_graph sandbox [options] -- CMD...`: run one command in the sandbox, for humans and agents.

Uploads only what the command needs (the `--input` paths, or by default the files and directories of the
current directory that the command line names), prints the command's output, exits with the command's
own status (124 on timeout, 75 on an environment failure) and records the sha256 of every uploaded file
in a manifest, so later edits cannot change what was evaluated.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from aka_graph.tools.evaluator.sandbox.job import SandboxJob, SandboxResult

MANIFEST_NAME = "sandbox-manifest.json"


def named_inputs(argv: list[str], cwd: Path) -> dict[str, Path]:
    """Existing files/directories inside `cwd` that the command line names, as words or `--opt=value`."""
    inputs: dict[str, Path] = {}
    root = cwd.resolve()
    for word in argv:
        for candidate in (word, word.partition("=")[2]):
            if not candidate or candidate.startswith(("/", "-")):
                continue
            path = (cwd / candidate).resolve()
            if path != root and path.is_relative_to(root) and path.exists():
                inputs.setdefault(path.relative_to(root).as_posix(), path)
    return inputs


def explicit_inputs(paths: list[Path], cwd: Path) -> dict[str, Path]:
    """`--input PATH`: inside cwd keeps its relative path; elsewhere it lands under its own name."""
    inputs: dict[str, Path] = {}
    for path in paths:
        if not path.exists():
            raise typer.BadParameter(f"{path} does not exist", param_hint="--input")
        resolved = path.resolve()
        dest = (
            resolved.relative_to(cwd.resolve()).as_posix()
            if resolved.is_relative_to(cwd.resolve())
            else path.name
        )
        if dest in ("", "."):
            raise typer.BadParameter(
                "upload files or subdirectories, not the whole directory", param_hint="--input"
            )
        inputs[dest] = path
    return inputs


def write_manifest(path: Path, argv: list[str], where: str, result: SandboxResult) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    failure = result.environment_failure.model_dump() if result.environment_failure else None
    manifest = {
        "argv": argv,
        "sandbox": where,
        "uploaded_sha256": result.input_sha256,
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "wall_s": round(result.wall_s, 3),
        "environment_failure": failure,
        "synced": {k: str(v) for k, v in result.synced.items()},
        "at": time.time(),
    }
    path.write_text(json.dumps(manifest, indent=2) + "\n")


def _parse_env(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--env")
        env[key] = value
    return env


def sandbox_command(
    command: Annotated[list[str], typer.Argument(help="the command to run, after --")],
    timeout: Annotated[float, typer.Option("--timeout", help="seconds; exceeded -> exit 124")] = 600.0,
    inputs: Annotated[list[Path] | None, typer.Option("--input", help="file or directory to upload")] = None,
    sync: Annotated[list[str] | None, typer.Option("--sync", help="job-relative path to copy back")] = None,
    results: Annotated[Path, typer.Option("--results", help="where synced paths and the manifest go")] = Path(
        "sandbox-results"
    ),
    env: Annotated[
        list[str] | None, typer.Option("--env", help="KEY=VALUE for the job (nothing else)")
    ] = None,
    isolation: Annotated[str, typer.Option("--isolation", help="local: auto, bwrap or none")] = "auto",
    gpu: Annotated[str | None, typer.Option("--gpu", help="local GPU index (visible by UUID)")] = None,
    exclusive_gpu: Annotated[
        bool, typer.Option("--exclusive-gpu", help="hold the GPU lock (timing)")
    ] = False,
    ssh: Annotated[str | None, typer.Option("--ssh", "--sandbox-ssh", help="[user@]host or alias")] = None,
    ssh_gpu: Annotated[str | None, typer.Option("--ssh-gpu", "--sandbox-ssh-gpu", help="GPU index")] = None,
    ssh_init: Annotated[
        str | None, typer.Option("--ssh-init", "--sandbox-ssh-init", help="host setup")
    ] = None,
    runtime_bind: Annotated[
        list[str] | None,
        typer.Option(
            "--runtime-bind", "--ssh-runtime-bind", "--sandbox-ssh-runtime-bind", help="SRC[=DST], ro"
        ),
    ] = None,
    ssh_config: Annotated[Path | None, typer.Option("--ssh-config", help="OpenSSH client config")] = None,
) -> None:
    """Run CMD in a fresh sandbox job directory holding only its inputs."""
    from aka_graph.tools.evaluator.sandbox.factory import SandboxSpec, make_sandbox

    cwd = Path.cwd()
    try:
        spec = SandboxSpec(
            isolation=isolation,  # type: ignore[arg-type]
            ssh_target=ssh,
            ssh_gpu=ssh_gpu,  # type: ignore[arg-type]
            ssh_init=ssh_init,
            runtime_binds=runtime_bind or [],
            gpu_index=gpu,  # type: ignore[arg-type]
            ssh_config=ssh_config,
        )
        sandbox = make_sandbox(spec)
    except (ValidationError, ValueError) as exc:
        typer.echo(f"aka_graph sandbox: {exc}", err=True)
        raise typer.Exit(2) from exc
    uploads = explicit_inputs(inputs, cwd) if inputs else named_inputs(command, cwd)
    job_env = {"PYTHONPATH": "."} | _parse_env(env or [])
    job = SandboxJob(
        argv=command,
        inputs=uploads,
        sync_back=sync or [],
        timeout_s=timeout,
        env=job_env,
        exclusive_gpu=exclusive_gpu,
        label="cli",
    )
    where = f"ssh:{ssh} gpu {spec.ssh_gpu}" if spec.kind == "ssh" else f"local ({sandbox.isolation})"  # type: ignore[attr-defined]
    typer.echo(f"aka_graph sandbox: {where}; uploading {', '.join(sorted(uploads)) or 'nothing'}", err=True)
    try:
        result = sandbox.run(job, results)
    finally:
        close = getattr(sandbox, "close", None)
        if close is not None:
            close()
    sys.stdout.write(result.stdout)
    sys.stdout.flush()
    sys.stderr.write(result.stderr)
    manifest = results / MANIFEST_NAME
    write_manifest(manifest, command, where, result)
    for rel, digest in sorted(result.input_sha256.items()):
        typer.echo(f"aka_graph sandbox: sha256 {digest}  {rel}", err=True)
    if result.environment_failure is not None:
        failure = result.environment_failure
        typer.echo(
            f"aka_graph sandbox: ENVIRONMENT FAILURE at {failure.stage}: {failure.diagnostic}", err=True
        )
    elif result.timed_out:
        typer.echo(f"aka_graph sandbox: timed out after {timeout:g}s (whole process tree killed)", err=True)
    typer.echo(f"aka_graph sandbox: exit {result.exit_code}; manifest {manifest}", err=True)
    raise typer.Exit(result.exit_code)


def register(app: typer.Typer) -> None:
    app.command(
        "sandbox",
        help=__doc__,
        context_settings={"allow_interspersed_args": False},
    )(sandbox_command)
