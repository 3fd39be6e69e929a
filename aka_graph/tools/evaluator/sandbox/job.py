"""The sandbox contract (design §3): what a job asks for and what comes back.

Every evaluation, profile and agent-requested GPU command goes through a `Sandbox`; the graph never
spawns GPU work directly, so an environment failure (exit 75) can always be told from a bad candidate.
"""

from __future__ import annotations

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
