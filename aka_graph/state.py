"""Typed campaign state (design §2): paths, digests and numbers only — kernels, logs and transcripts stay
on disk, so a checkpoint stays small and a resumed campaign reads the same files the killed one wrote.

`CampaignInput`/`CampaignOutput` are the public schemas a parent graph (or `langgraph dev`) sees.
"""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

EpisodeKind = Literal["fast", "full"]
OptimizationMode = Literal["leaderboard", "production"]
V1Policy = Literal["auto", "always", "never"]
Outcome = Literal["promoted", "rejected", "no_candidate", "policy_rejected", "incomparable"]

# Nodes that talk to the sandbox: an environment failure in one of them parks the campaign in
# `await_environment`, which routes back to the same node once the health probe passes.
RESUMABLE_NODES = ("baseline_v0", "framework_baseline_v1", "evaluate", "abba")


class CampaignConfig(BaseModel):
    """Every `run` flag (design §1). Frozen: a resumed campaign must run with the settings it started with."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    op_dir: str = Field(description="operator directory: SOL-ExecBench (definition.json) or native")
    platform: str | None = Field(default=None, description="logical GPU target, e.g. H200; None = detect")
    framework: str = "triton"
    agent_cli: str = "claude"
    replay_script: str | None = Field(default=None, description="replay backend's script (agent_cli=replay)")
    reviewers: list[str] = Field(default_factory=list, description="reviewer CLIs, one fan-out branch each")
    optimization_mode: OptimizationMode = "leaderboard"
    max_iters: int = Field(default=10, ge=0, description="episodes to run at most")
    token_budget: int | None = Field(default=None, ge=0, description="tokens over every agent session")
    max_stall: int = Field(default=5, ge=1, description="stop after this many episodes without promotion")
    target_util: float | None = Field(default=None, gt=0, description="stop at this utilization (%)")
    fast_episodes: int = Field(default=2, ge=0)
    fast_trials: int = Field(default=5, ge=1)
    convert_after: int = Field(default=3, ge=1, description="stalls before a Triton campaign goes Gluon")
    conversion_parity_pct: float = Field(default=5.0, ge=0)
    verify_repeats: int = Field(default=2, ge=1)
    min_improvement_pct: float = Field(default=1.0, ge=0)
    regression_guard_pct: float = Field(default=5.0, ge=0)
    v1: V1Policy = "auto"
    handoff_resumes: int = Field(default=2, ge=0)
    seeds: int = Field(default=3, ge=1)
    device: str = "auto"
    workspace: str = Field(default=".", description="parent of checkpoints/ and the campaign workspace")
    sandbox_ssh: str | None = None
    sandbox_ssh_gpu: int | None = None
    sandbox_ssh_init: str | None = None
    gpu_index: int | None = None
    environment_poll_interval: float = Field(default=30.0, gt=0)
    max_environment_retries: int = Field(
        default=3, ge=1, description="INFRA_ERRORs of one step before giving up"
    )
    agent_timeout_s: float = Field(default=3600.0, gt=0)
    eval_timeout_s: float = Field(default=900.0, gt=0)
    agent_effort: Literal["low", "medium", "high", "xhigh", "max"] = "high"

    @field_validator("op_dir")
    @classmethod
    def _op_dir_given(cls, value: str) -> str:
        if not value:
            raise ValueError(
                "--op-dir is empty: pass an operator directory (definition.json or reference.py)"
            )
        return value


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
    op_name: str
    platform: str
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
    workspace_root: str = ""
    op_name: str = ""
    op_format: str = ""
    platform: str = Field(default="", description="the resolved target, part of the workspace name")
    arch: str = ""
    gpu_name: str = ""
    frameworks_available: list[str] = Field(default_factory=list)
    incumbent: Incumbent | None = None
    baseline_objective: float | None = None
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
    env_retries: int = 0
    stop_reason: str | None = None
    report_path: str | None = None
    submission_path: str | None = None

    @property
    def ws(self) -> Path:
        return Path(self.workspace_root)


class CampaignInput(BaseModel):
    """What a caller supplies: the settings (everything else is derived or read back from disk)."""

    config: CampaignConfig


class CampaignOutput(BaseModel):
    """What a caller gets back (no reducer keys leak into a parent graph)."""

    workspace_root: str = ""
    incumbent: Incumbent | None = None
    last_decision: Decision | None = None
    stop_reason: str | None = None
    next_version: int = 0
    report_path: str | None = None
    submission_path: str | None = None
