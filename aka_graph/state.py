"""Typed campaign state (design §2): paths, digests and numbers only — kernels, logs and transcripts stay
on disk, so a checkpoint stays small and a resumed campaign reads the same files the killed one wrote.

`CampaignInput`/`CampaignOutput` are the public schemas a parent graph (or `langgraph dev`) sees.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from aka_graph.target import CampaignTarget

EpisodeKind = Literal["fast", "full"]
OptimizationMode = Literal["leaderboard", "production"]
V1Policy = Literal["auto", "always", "never"]
Outcome = Literal["promoted", "rejected", "no_candidate", "policy_rejected", "incomparable"]


class CampaignConfig(BaseModel):
    """Every `run` flag (design §1): `run`'s options are generated from these fields (type, default and
    description), so the CLI, `--help` and the LangGraph input schema cannot disagree.

    Frozen: a resumed campaign runs with the settings it started with. Fields marked `infrastructure` say
    where the campaign runs, not what it is (the sandbox host, the GPU): they are left out of `identity()`,
    so moving a campaign to another GPU host is no conflict.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    op_dir: str = Field(
        description="Operator directory: SOL-ExecBench (definition.json + workload.jsonl) or native "
        "(reference.py, input.py, shapes.json)."
    )
    platform: str | None = Field(
        default=None,
        description="Logical target GPU, e.g. H200, or cpu. Real hardware is detected first; an unknown "
        "name is an error. Default: the detected GPU.",
    )
    framework: str = Field(
        default="triton",
        description="triton, gluon, cute_dsl or cuda. `run` without --framework starts one campaign per "
        "framework the target GPU supports, concurrently (CPU/interpreter: triton).",
    )
    agent_cli: str = Field(
        default="claude", description="Coding-agent CLI: claude, codex, qoder, pi or replay."
    )
    replay_script: str | None = Field(
        default=None, description="Script of the replay backend (--agent-cli replay)."
    )
    reviewers: list[str] = Field(
        default_factory=list,
        description="Reviewer CLI for full episodes (repeatable: one parallel review per reviewer).",
        json_schema_extra={"cli": "--reviewer"},
    )
    optimization_mode: OptimizationMode = Field(
        default="leaderboard",
        description="leaderboard, or production (private shapes, policy review, V1, derived problem).",
    )
    max_iters: int = Field(default=10, ge=0, description="Episodes to run at most.")
    token_budget: int | None = Field(
        default=None,
        ge=0,
        description="Stop once every agent session together (reviewers, retries, handoff resumes) spent "
        "this many tokens. Default: no budget.",
    )
    max_stall: int = Field(
        default=5, ge=1, description="Stop after this many episodes in a row without a promotion."
    )
    target_util: float | None = Field(
        default=None,
        gt=0,
        description="Stop once the incumbent reaches this utilization (% of speed of light).",
    )
    fast_episodes: int = Field(
        default=2, ge=0, description="The first N episodes are fast (no plan, no review)."
    )
    fast_trials: int = Field(
        default=5,
        ge=1,
        description="Implement-evaluate rounds per fast episode; the campaign keeps the best.",
    )
    convert_after: int = Field(
        default=3, ge=1, description="Stalls before a Triton campaign converts to Gluon."
    )
    conversion_parity_pct: float = Field(
        default=5.0, ge=0, description="A Gluon conversion passes within this % of the Triton incumbent."
    )
    verify_repeats: int = Field(default=2, ge=1, description="ABBA repeats in a full episode's verification.")
    min_improvement_pct: float = Field(
        default=1.0,
        ge=0,
        description="Promote only above this improvement in % (one-sided test over the repeats).",
    )
    regression_guard_pct: float = Field(
        default=5.0, ge=0, description="Reject a candidate when any shape regresses more than this %."
    )
    v1: V1Policy = Field(
        default="auto",
        description="Framework-native V1 before the episodes: auto (production only), always, never.",
    )
    handoff_resumes: int = Field(
        default=2, ge=0, description="Resumes of an agent session that ended without its deliverable."
    )
    seeds: int = Field(default=3, ge=1, description="Correctness seeds per evaluation.")
    device: str = Field(default="auto", description="Harness device: auto, cuda or cpu.")
    blob_root: str | None = Field(
        default=None,
        description="Dataset directory that workloads' safetensors input paths are relative to.",
    )
    all_workloads: bool = Field(
        default=False,
        description="On a host without a GPU, evaluate every workload (default: a stated representative "
        "subset within the interpreter's work cap).",
    )
    warm_evaluator: bool = Field(
        default=True,
        description="Evaluate the campaign's candidates in one long-lived evaluator job per operator "
        "(a fresh worker and fresh seeds per candidate; the local sandbox only), falling back to a cold "
        "job on any failure of it.",
    )
    workspace: str = Field(
        default=".",
        description="Parent of checkpoints/ and of the campaign directory kernel_opt_<op>_<fw>_<platform>.",
    )
    sandbox_ssh: str | None = Field(
        default=None,
        description="Run GPU jobs on host (or user@host) over SSH. Default: the local sandbox.",
        json_schema_extra={"infrastructure": True},
    )
    sandbox_ssh_gpu: int | None = Field(
        default=None, description="GPU index on the SSH host.", json_schema_extra={"infrastructure": True}
    )
    sandbox_ssh_init: str | None = Field(
        default=None,
        description="Shell command run on the SSH host before its jobs (e.g. activate an environment).",
        json_schema_extra={"infrastructure": True},
    )
    gpu_index: int | None = Field(
        default=None,
        description="GPU index of the local sandbox. Default: GPU 0 where there is one.",
        json_schema_extra={"infrastructure": True},
    )
    environment_poll_interval: float = Field(
        default=30.0,
        gt=0,
        description="Seconds between health probes while the environment is down.",
    )
    max_environment_retries: int = Field(
        default=3,
        ge=1,
        description="Environment failures (INFRA_ERROR) of one step before the campaign gives up.",
    )
    agent_timeout_s: float = Field(
        default=3600.0, gt=0, description="Wall-clock limit of one agent turn, in s."
    )
    eval_timeout_s: float | None = Field(
        default=None,
        gt=0,
        description="Wall-clock limit of one evaluation job, in s (default: 300 s + 15 s per workload "
        "and seed; a verification job gets it once per kernel and repeat).",
        json_schema_extra={"cli": "--eval-timeout"},
    )
    agent_isolation: Literal["auto", "bwrap", "userns", "none"] = Field(
        default="auto",
        description="Production mode: how agent processes are confined to their worktree (bubblewrap, "
        "else a mount namespace hiding the campaign's private paths; none only for debugging).",
    )
    agent_effort: Literal["low", "medium", "high", "xhigh", "max"] = Field(
        default="high", description="Reasoning effort asked of the agent CLIs."
    )

    @field_validator("op_dir")
    @classmethod
    def _op_dir_given(cls, value: str) -> str:
        if not value:
            raise ValueError(
                "--op-dir is empty: pass an operator directory (definition.json or reference.py)"
            )
        return value

    @classmethod
    def infrastructure_fields(cls) -> frozenset[str]:
        """Settings that say where the campaign runs (sandbox host, GPU), not what it is."""
        return frozenset(
            name
            for name, info in cls.model_fields.items()
            if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("infrastructure")
        )

    def identity(self) -> dict[str, Any]:
        """The settings that make the campaign what it is: two configs with the same identity are the same
        campaign (a restart on another GPU host resumes it instead of being refused as a conflict)."""
        return self.model_dump(exclude=set(self.infrastructure_fields()))


class Incumbent(BaseModel):
    """The kernel every candidate must beat: a pinned version on the campaign branch."""

    version: int
    kernel_path: str = Field(description="a frozen copy of the promoted kernel.py's directory")
    sha256: str
    objective: float | None
    utilization_pct: float | None = None
    timing_method: str = "none"
    commit: str = ""
    framework: str = "triton"


class TrialRecord(BaseModel):
    """One implement→evaluate round; the numbers are the campaign's, not the agent's."""

    episode: int
    trial: int
    kernel_dir: str
    sha256: str | None = None
    status: str = "PENDING"
    objective: float | None = None
    utilization_pct: float | None = None
    timing_method: str = "none"
    result_path: str | None = None
    tokens: int = 0
    message: str = ""


class ReviewNote(BaseModel):
    episode: int
    reviewer: str
    notes_path: str
    ok: bool
    tokens: int = 0


class Decision(BaseModel):
    """What verify/promote decided for one episode, with the numbers that decided it."""

    episode: int
    version: int
    outcome: Outcome
    reason: str
    improvement_pct: float | None = None
    p_value: float | None = None
    worst_shape_regression_pct: float | None = None
    candidate_sha256: str | None = None
    incumbent_sha256: str | None = None
    framework: str = "triton"


class ReviewTask(BaseModel):
    """The payload `route_after_plan` sends to each `review` branch."""

    reviewer: str
    episode: int
    workspace_root: str
    config: CampaignConfig
    budget_left: int | None = None


class EnvironmentBlock(BaseModel):
    node: str
    diagnostic: str
    attempts: int = 1


def merge_reviews(current: dict[str, ReviewNote], update: dict[str, ReviewNote]) -> dict[str, ReviewNote]:
    """Fan-in reducer: one entry per (episode, reviewer), so a re-run branch replaces, never duplicates."""
    return {**(current or {}), **(update or {})}


class CampaignState(BaseModel):
    config: CampaignConfig
    target: CampaignTarget | None = Field(
        default=None, description="operator, platform, arch, frameworks: resolved once, by preprocess"
    )
    workspace_root: str = ""
    incumbent: Incumbent | None = None
    next_version: int = 0
    episode: int = 0
    episode_kind: EpisodeKind = "fast"
    episode_framework: str = "triton"
    converting: bool = False
    trial: int = 0
    trials: list[TrialRecord] = Field(default_factory=list, description="the current episode's trials")
    candidate: TrialRecord | None = None
    reviews: Annotated[dict[str, ReviewNote], merge_reviews] = Field(default_factory=dict)
    tokens_spent: Annotated[int, operator.add] = 0
    agent_sessions: Annotated[int, operator.add] = 0
    stalls: int = 0
    gluon_locked: bool = False
    policy_ok: bool | None = None
    last_decision: Decision | None = None
    blocked: EnvironmentBlock | None = None
    stop_reason: str | None = None
    failed: str | None = Field(default=None, description="why the campaign failed (the run exits non-zero)")
    report_path: str | None = None
    submission_path: str | None = None


class CampaignInput(BaseModel):
    """What a caller supplies: the settings (everything else is derived or read back from disk)."""

    config: CampaignConfig


class CampaignOutput(BaseModel):
    """What a caller gets back (no reducer keys leak into a parent graph)."""

    workspace_root: str = ""
    incumbent: Incumbent | None = None
    last_decision: Decision | None = None
    stop_reason: str | None = None
    failed: str | None = None
    next_version: int = 0
    report_path: str | None = None
    submission_path: str | None = None
