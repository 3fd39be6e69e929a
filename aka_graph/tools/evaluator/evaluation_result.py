"""Coordinator-side schema of the harness's evaluation JSON (design §3 'Evaluation result').

The GPU-side harness writes plain JSON with the standard library; this model validates it on the way in,
so a malformed or truncated result is an INFRA_ERROR, never a score.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

SCHEMA_ID = "aka_graph.evaluation.v1"

Status = Literal[
    "PASS", "COMPILE_ERROR", "INCORRECT", "RUNTIME_ERROR", "TIMEOUT", "REWARD_HACK", "INFRA_ERROR"
]
TimingMethod = Literal["cuda_graph", "cuda_event", "host_interpreter", "none"]


class DeviceInfo(BaseModel):
    name: str
    arch: str = Field(description="e.g. sm_90, or 'cpu' under the Triton interpreter")
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None


class WorkloadResult(BaseModel):
    id: str = Field(description="workload uuid, or an opaque id when the shape is private")
    status: Status
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    latency_us: float | None = None
    spread_pct: float | None = Field(default=None, description="robust spread of the timing samples")
    sol_bound_us: float | None = None
    utilization_pct: float | None = None
    reference_latency_us: float | None = None
    message: str = ""
    # Extensions (A1, backwards compatible: all optional)
    sol_hard_bound_us: float | None = Field(
        default=None,
        description="the outputs' bytes at the datasheet bandwidth; a latency below it is REWARD_HACK",
    )
    bytes_moved: int | None = None
    flops: int | None = None
    timing_method: TimingMethod | None = Field(default=None, description="this workload's method")
    kernels_per_call: float | None = Field(default=None, description="kernels captured per call")
    reference_timing_method: TimingMethod | None = None
    seeds_checked: int | None = Field(
        default=None, description="correctness seeds this workload was checked on (fewer: a slow generator)"
    )


class Summary(BaseModel):
    objective: float | None = Field(default=None, description="the campaign objective (lower is better)")
    geomean_latency_us: float | None = None
    geomean_utilization_pct: float | None = None


class EvaluationResult(BaseModel):
    schema_id: Literal["aka_graph.evaluation.v1"] = Field(alias="schema", default=SCHEMA_ID)
    status: Status
    kernel_sha256: str
    device: DeviceInfo
    timing_method: TimingMethod
    authoritative: bool
    seeds: list[int] = Field(default_factory=list)
    workloads: list[WorkloadResult] = Field(default_factory=list)
    summary: Summary = Field(default_factory=Summary)
    message: str = ""
    # Extensions (A1, backwards compatible: all optional)
    operator: str = ""
    format: Literal["sol", "native", ""] = ""
    seed_scales: list[float] = Field(default_factory=list, description="input scale of each seed")
    phases_s: dict[str, float] = Field(default_factory=dict, description="harness wall time per phase")
    timeline_s: dict[str, float] = Field(
        default_factory=dict, description="start-up milestones of parent and worker, s since the command"
    )
    reference_timing_cache: dict[str, Any] = Field(
        default_factory=dict, description="whether reference latencies came from the cache, and which"
    )
    output_transfer: dict[str, Any] = Field(
        default_factory=dict, description="outputs through the shared region (bytes) or the pipe"
    )
    spans_s: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="the trusted parent's own steps: seconds and count per name"
    )
    worker_spans_s: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="the worker's own account of its steps (advisory, never judged)"
    )
    service: dict[str, Any] = Field(
        default_factory=dict, description="set when a warm evaluator service evaluated it (serve.py)"
    )

    model_config = {"populate_by_name": True}
