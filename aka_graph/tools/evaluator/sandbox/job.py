"""The sandbox contract (design §3): what a job asks for and what comes back.

Every evaluation, profile and agent-requested GPU command goes through a `Sandbox`; the graph never
spawns GPU work directly, so an environment failure (exit 75) can always be told from a bad candidate.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

EXIT_TIMEOUT = 124
EXIT_ENVIRONMENT = 75  # EX_TEMPFAIL: the environment failed, not the command


class SandboxJob(BaseModel):
    """One command to run in a fresh job directory holding only the allowlisted inputs."""

    model_config = ConfigDict(frozen=True)

    argv: list[str] = Field(min_length=1, description="command, run with the job directory as cwd")
    inputs: dict[str, Path] = Field(
        default_factory=dict,
        description="job-relative destination -> local source file or directory (the explicit allowlist)",
    )
    sync_back: list[str] = Field(default_factory=list, description="job-relative paths copied back")
    timeout_s: float = Field(gt=0, description="wall-clock limit; exceeded -> exit 124, whole tree killed")
    env: dict[str, str] = Field(default_factory=dict, description="the complete environment")
    gpu_index: int | None = Field(default=None, description="GPU to expose, by index on the host")
    exclusive_gpu: bool = Field(
        default=False, description="hold the host-wide per-GPU lock for the job (timing jobs)"
    )
    label: str = Field(default="job", description="short name used in logs and job directory names")


class EnvironmentFailure(BaseModel):
    """Why a job's failure is the environment's (exit 75), with when and where it happened."""

    stage: Literal["transport", "preflight", "upload", "run", "download", "health", "cleanup"]
    diagnostic: str
    at: float = Field(description="unix time of the failure")


class SandboxResult(BaseModel):
    exit_code: int
    stdout: str
    stderr: str
    synced: dict[str, Path] = Field(default_factory=dict, description="job-relative path -> local copy")
    wall_s: float
    timed_out: bool = False
    environment_failure: EnvironmentFailure | None = None
    input_sha256: dict[str, str] = Field(
        default_factory=dict, description="sha256 of every uploaded file (job-relative path -> digest)"
    )

    @property
    def is_environment_failure(self) -> bool:
        return self.exit_code == EXIT_ENVIRONMENT and self.environment_failure is not None


class HealthReport(BaseModel):
    healthy: bool
    diagnostic: str = ""
    device: dict[str, str] = Field(default_factory=dict)


@runtime_checkable
class Sandbox(Protocol):
    """A place to run jobs: `LocalSandbox` or `SshSandbox`."""

    name: str

    def run(self, job: SandboxJob, results_dir: Path) -> SandboxResult:
        """Run `job`; copy `sync_back` paths under `results_dir`. Never raises for a failed command."""
        ...

    def health(self) -> HealthReport:
        """The health probe: is the GPU (or CPU, in tests) usable right now?"""
        ...


class LiveJob:
    """A job left running by `start` (the warm evaluator): its directory, its process, and the GPU lock's
    key for the requests the caller sends it."""

    def __init__(
        self, root: Path, work: Path, proc: subprocess.Popen[bytes], lock_key: str, grace_s: float
    ) -> None:
        self.root, self.work, self.proc, self.lock_key, self.grace_s = root, work, proc, lock_key, grace_s

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr_tail(self, n: int = 2000) -> str:
        try:
            return (self.root / "stderr").read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> None:
        """The whole process tree killed (the job's own session) and its directory removed."""
        from aka_graph.process_tree import kill_tree

        if self.alive():
            kill_tree(self.proc.pid, self.grace_s)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)
