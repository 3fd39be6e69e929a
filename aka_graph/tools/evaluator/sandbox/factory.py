"""`SandboxSpec` (what the user asked for on the command line) -> a `Sandbox`.

The spec is plain data that can live in campaign state and checkpoints; the sandbox itself (which holds
an SSH connection) is rebuilt from it. Validation errors name the flag and the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from aka_graph.tools.evaluator.sandbox.binds import check_runtime_bind, parse_runtime_bind
from aka_graph.tools.evaluator.sandbox.gpu import parse_gpu_selector
from aka_graph.tools.evaluator.sandbox.job import Sandbox


class SandboxSpec(BaseModel):
    """Where and how jobs run: `local` (default) or `ssh` (`--sandbox-ssh` + `--sandbox-ssh-gpu`)."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["local", "ssh"] = "local"
    isolation: Literal["auto", "bwrap", "none"] = "auto"
    ssh_target: str | None = None
    ssh_gpu: int | None = None
    ssh_init: str | None = None
    runtime_binds: list[str] = []
    health_command: list[str] | None = None
    gpu_index: int | None = None
    ssh_config: Path | None = None  # an OpenSSH client config instead of ~/.ssh/config

    @field_validator("ssh_gpu", mode="before")
    @classmethod
    def _gpu_is_an_index(cls, value: object) -> object:
        return None if value is None else parse_gpu_selector(value, "--sandbox-ssh-gpu")  # type: ignore[arg-type]

    @field_validator("gpu_index", mode="before")
    @classmethod
    def _local_gpu_is_an_index(cls, value: object) -> object:
        return None if value is None else parse_gpu_selector(value, "--gpu")  # type: ignore[arg-type]

    @field_validator("runtime_binds")
    @classmethod
    def _binds_are_narrow(cls, value: list[str]) -> list[str]:
        for spec in value:
            check_runtime_bind(parse_runtime_bind(spec))
        return value

    @model_validator(mode="before")
    @classmethod
    def _ssh_target_implies_ssh(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("ssh_target") and "kind" not in data:
            return {**data, "kind": "ssh"}
        return data

    @model_validator(mode="after")
    def _ssh_needs_target_and_gpu(self) -> SandboxSpec:
        if self.kind == "ssh":
            if not self.ssh_target:
                raise ValueError("an SSH sandbox needs --sandbox-ssh [user@]host (or an ~/.ssh/config alias)")
            if self.ssh_gpu is None:
                raise ValueError(
                    "--sandbox-ssh-gpu is required with --sandbox-ssh: give the index of the GPU on the host "
                    "that nvidia-smi prints, e.g. --sandbox-ssh-gpu 0"
                )
        else:
            stray = [
                flag
                for flag, value in (
                    ("--sandbox-ssh-gpu", self.ssh_gpu),
                    ("--sandbox-ssh-init", self.ssh_init),
                )
                if value is not None
            ]
            if stray:
                raise ValueError(f"{', '.join(stray)} only apply with --sandbox-ssh; add --sandbox-ssh HOST")
        return self


def make_sandbox(spec: SandboxSpec) -> Sandbox:
    """Build the sandbox `spec` describes (an SSH sandbox connects lazily, on its first job)."""
    if spec.kind == "ssh":
        from aka_graph.tools.evaluator.sandbox.ssh import SshSandbox

        assert spec.ssh_target is not None and spec.ssh_gpu is not None
        return SshSandbox(
            spec.ssh_target,
            spec.ssh_gpu,
            init_command=spec.ssh_init,
            runtime_binds=list(spec.runtime_binds),
            health_command=spec.health_command,
            ssh_config=spec.ssh_config,
        )
    from aka_graph.tools.evaluator.sandbox.local import LocalSandbox

    return LocalSandbox(
        isolation=spec.isolation,
        health_command=spec.health_command,
        runtime_binds=list(spec.runtime_binds),
        # no index given: LocalSandbox's own default (GPU 0 on an NVIDIA host), never "no GPU at all"
        gpu_index="auto" if spec.gpu_index is None else spec.gpu_index,
    )
