"""How a job's raw outcome becomes a `SandboxResult`: the one place that decides what exit 75 means.

A failed command is the candidate's unless the health probe run right after it fails too; transport,
preflight and setup failures are always the environment's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from aka_graph.tools.evaluator.sandbox.job import (
    EXIT_ENVIRONMENT,
    EXIT_TIMEOUT,
    EnvironmentFailure,
    HealthReport,
    SandboxResult,
)

MAX_OUTPUT_CHARS = 4_000_000
Stage = str


def read_output(path: Path, limit: int = MAX_OUTPUT_CHARS) -> str:
    """A job's captured stream, decoded leniently, keeping the tail when it is huge."""
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if len(text) > limit:
        text = f"[... {len(text) - limit} characters cut ...]\n" + text[-limit:]
    return text


def environment_failure(
    stage: Stage,
    diagnostic: str,
    *,
    wall_s: float,
    stdout: str = "",
    stderr: str = "",
    input_sha256: dict[str, str] | None = None,
    synced: dict[str, Path] | None = None,
) -> SandboxResult:
    """An exit-75 result recording where and why the environment failed."""
    return SandboxResult(
        exit_code=EXIT_ENVIRONMENT,
        stdout=stdout,
        stderr=stderr,
        synced=synced or {},
        wall_s=wall_s,
        environment_failure=EnvironmentFailure(stage=stage, diagnostic=diagnostic, at=time.time()),  # type: ignore[arg-type]
        input_sha256=input_sha256 or {},
    )


def judge_command(
    *,
    exit_code: int,
    timed_out: bool,
    stdout: str,
    stderr: str,
    wall_s: float,
    synced: dict[str, Path],
    input_sha256: dict[str, str],
    probe: Callable[[], HealthReport],
) -> SandboxResult:
    """The command ran: success stands; a failure is the candidate's only if the health probe passes."""
    code = EXIT_TIMEOUT if timed_out else exit_code
    if code != 0:
        report = probe()
        if not report.healthy:
            return environment_failure(
                "health",
                f"command exited {code} and the health probe failed: {report.diagnostic}",
                wall_s=wall_s,
                stdout=stdout,
                stderr=stderr,
                input_sha256=input_sha256,
                synced=synced,
            )
    return SandboxResult(
        exit_code=code,
        stdout=stdout,
        stderr=stderr,
        synced=synced,
        wall_s=wall_s,
        timed_out=timed_out,
        input_sha256=input_sha256,
    )


def health_from_result(result: SandboxResult) -> HealthReport:
    """Read the probe's JSON line (if any) from a probe job's result."""
    import json

    device: dict[str, str] = {}
    diagnostic = ""
    for line in reversed(result.stdout.strip().splitlines()):
        try:
            parsed = json.loads(line)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            device = {str(k): str(v) for k, v in (parsed.get("device") or {}).items()}
            diagnostic = str(parsed.get("diagnostic", ""))
            break
    healthy = result.exit_code == 0 and result.environment_failure is None
    if not healthy and not diagnostic:
        if result.environment_failure is not None:
            diagnostic = f"{result.environment_failure.stage}: {result.environment_failure.diagnostic}"
        else:
            tail = (result.stderr or result.stdout).strip()[-800:]
            diagnostic = f"probe exited {result.exit_code}" + (f": {tail}" if tail else "")
    return HealthReport(healthy=healthy, diagnostic=diagnostic, device=device)
