"""The command-task file (TOML), validated field by field.

A command task is a kernel that lives inside a source tree: built by the project's own build, checked by
its own correctness test and timed by its own benchmark. The file says where the tree is, which files an
agent may edit, the three commands, the cases, and which keys of the benchmark's output are device-side
timings. Everything a verdict depends on is declared here, so a mistake is caught when the file is
loaded, not after an agent has worked for an hour.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from aka_graph.tasks.job_runner import JOB_PLACEHOLDERS, PLACEHOLDER, is_batch

TASK_FILE_NAME = "aka_task.toml"
SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]+$")
# A timing key whose name says it was taken on the host (or by a wall clock) cannot be a device-side
# time: refused when the file is loaded.
HOST_TIMING = re.compile(r"wall|host|cpu|perf_counter|process_time|monotonic|clock|time_time", re.IGNORECASE)
# Environment variables a task may not set: they steer our own sandbox, caches and device choice.
RESERVED_ENV = frozenset(
    {
        "PATH",
        "HOME",
        "TMPDIR",
        "PYTHONPATH",
        "CUDA_VISIBLE_DEVICES",
        "TRITON_CACHE_DIR",
        "TORCH_EXTENSIONS_DIR",
        "TRITON_INTERPRET",
        "AKA_TASK_DEVICE",
        "LD_PRELOAD",
    }
)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Command(Strict):
    argv: list[str] = Field(
        min_length=1,
        description="run with the tree as cwd; placeholders: "
        "{python} {tree} {device} {seed} {cases} and, per case, the case's fields",
    )
    timeout_s: float = Field(default=600, gt=0, le=24 * 3600)


class Commands(Strict):
    build: Command | None = Field(default=None, description="omit for a tree with nothing to build")
    correctness: Command
    performance: Command


class Case(BaseModel):
    """One case: an id plus whatever parameters the task's commands take (ints, floats, strings)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    id: str

    @field_validator("id")
    @classmethod
    def _safe_id(cls, value: str) -> str:
        if not SAFE_ID.match(value):
            raise ValueError(f"case id {value!r} may use only letters, digits, '_', '.', '-'")
        return value

    def params(self) -> dict[str, Any]:
        return {"id": self.id, **(self.model_extra or {})}


class Cases(Strict):
    correctness: list[Case] = Field(default_factory=list, description="checked, never timed")
    performance: list[Case] = Field(min_length=1, description="checked for correctness, then timed")


class Performance(Strict):
    timing_keys: list[str] = Field(min_length=1, description="device-side timing keys; the first is scored")
    unit: Literal["ns", "us", "ms"] = "us"
    method: Literal["cuda_graph", "cuda_event"] = Field(
        default="cuda_graph", description="how the task's benchmark times on the device"
    )
    capture_key: str | None = Field(
        default=None, description="key giving the kernels captured in the timed CUDA graph; 0 is rejected"
    )

    @field_validator("timing_keys")
    @classmethod
    def _device_side(cls, keys: list[str]) -> list[str]:
        for key in keys:
            if HOST_TIMING.search(key):
                raise ValueError(
                    f"{key!r} names a host or wall-clock timing; declare only device-side timing keys "
                    "(CUDA events or CUDA-graph replay), e.g. 'device_us'"
                )
        return keys


class CommandTask(Strict):
    name: str = Field(pattern=SAFE_ID.pattern)
    source_tree: str = Field(description="the tree: absolute, or relative to the task file")
    editable: list[str] = Field(min_length=1, description="globs of the files an agent may edit")
    scratch: list[str] = Field(
        default_factory=list, description="globs a build may write (ignored by the guard, never uploaded)"
    )
    stale_paths: list[str] = Field(default_factory=list, description="globs deleted before every build")
    build_outputs: list[str] = Field(
        default_factory=list, description="globs deleted before every build and required after it"
    )
    env: dict[str, str] = Field(default_factory=dict, description="set on every command")
    rebuild_env: dict[str, str] = Field(default_factory=dict, description="set, forced, on the build only")
    commands: Commands
    cases: Cases
    performance: Performance

    @field_validator("editable", "scratch", "stale_paths", "build_outputs")
    @classmethod
    def _relative_globs(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            parts = pattern.split("/")
            if not pattern or pattern.startswith("/") or ".." in parts or pattern in ("*", "**"):
                raise ValueError(f"{pattern!r} must be a glob relative to the tree, inside it, not all of it")
        return patterns

    @field_validator("env", "rebuild_env")
    @classmethod
    def _not_reserved(cls, env: dict[str, str]) -> dict[str, str]:
        reserved = sorted(set(env) & RESERVED_ENV)
        if reserved:
            raise ValueError(f"{', '.join(reserved)} are set by the evaluator; remove them")
        return env

    @model_validator(mode="after")
    def _consistent(self) -> CommandTask:
        ids = [case.id for case in self.all_cases]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"case ids must be unique across correctness and performance: {duplicates}")
        for phase in ("build", "correctness", "performance"):
            command = getattr(self.commands, phase)
            if command is None:
                continue
            cases = (
                []
                if phase == "build" or is_batch(command.argv)
                else (self.all_cases if phase == "correctness" else list(self.cases.performance))
            )
            for arg in command.argv:
                for name in PLACEHOLDER.findall(arg):
                    if name in JOB_PLACEHOLDERS:
                        continue
                    lacking = [c.id for c in cases if name not in c.params()] if cases else ["(no case)"]
                    if lacking:
                        raise ValueError(
                            f"commands.{phase}: placeholder {{{name}}} is not a case field of "
                            f"{', '.join(lacking[:5])}; use {{python}} {{tree}} {{device}} "
                            "{seed} {cases} or a field every case has"
                        )
        overlap = set(self.rebuild_env) & set(self.env)
        if overlap:
            raise ValueError(
                f"{sorted(overlap)} are in both env and rebuild_env: a rebuild variable must "
                "reach the build only"
            )
        return self

    @property
    def all_cases(self) -> list[Case]:
        """Every case correctness runs on: the correctness cases and every scored performance case."""
        return [*self.cases.correctness, *self.cases.performance]

    @property
    def unit_to_us(self) -> float:
        return {"ns": 1e-3, "us": 1.0, "ms": 1e3}[self.performance.unit]
