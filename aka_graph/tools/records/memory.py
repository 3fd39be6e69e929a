"""Version records (`memory/vN.json`) and the live record (`memory/live.json`) of a campaign.

Records are what the next agent reads to learn what was tried, and what the report is built from, so
they are written atomically (temporary file + rename): a crash leaves the old record or the new one,
never half of one.
"""

from __future__ import annotations

import os
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from aka_graph.cli_agents.base import TokenUsage
from aka_graph.tools.evaluator.evaluation_result import EvaluationResult
from aka_graph.tools.records.layout import CampaignLayout

VERSION_FILE = re.compile(r"^v(\d+)\.json$")

Decision = Literal[
    "baseline",  # V0: the verbatim reference
    "pinned",  # V1: the first framework-native kernel
    "promoted",
    "rejected",  # correct but not a supported improvement
    "incorrect",  # no trial passed correctness
    "forbidden_edit",  # edited files outside the editable set
    "policy_rejected",
    "no_candidate",
    "infra_error",
    "stopped",
]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ShapePerformance(BaseModel):
    """One workload's numbers (ids are opaque when shapes are private)."""

    id: str
    status: str
    latency_us: float | None = None
    reference_latency_us: float | None = None
    utilization_pct: float | None = None
    sol_bound_us: float | None = None
    speedup_vs_v0: float | None = None


class Correctness(BaseModel):
    status: str
    seeds: list[int] = Field(default_factory=list)
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    failed_workloads: list[str] = Field(default_factory=list)
    message: str = ""


class QualityGate(BaseModel):
    """Checks beyond correctness (policy review, forbidden edits, tamper detection)."""

    passed: bool = True
    checks: dict[str, bool] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


class VersionRecord(BaseModel):
    """What version N is and how it was decided; `memory/v<N>.json`."""

    version: int = Field(ge=0)
    kind: Literal["v0", "v1", "episode"]
    episode: int | None = None
    mode: Literal["fast", "full"] | None = None
    framework: str | None = None
    commit: str | None = Field(default=None, description="campaign-branch commit of this version's kernel")
    kernel_sha256: str | None = None
    decision: Decision
    reason: str = ""
    objective: float | None = None
    geomean_latency_us: float | None = None
    utilization_pct: float | None = Field(default=None, description="geomean utilization reached")
    timing_method: str | None = None
    authoritative: bool | None = None
    performance: list[ShapePerformance] = Field(default_factory=list)
    correctness: Correctness | None = None
    quality_gate: QualityGate = Field(default_factory=QualityGate)
    verdict: dict[str, Any] = Field(default_factory=dict, description="the verify numbers")
    experiments: list[str] = Field(default_factory=list)
    open_directions: list[str] = Field(default_factory=list)
    tokens: TokenUsage | None = None
    created_at: str = Field(default_factory=_now)

    @classmethod
    def from_evaluation(cls, version: int, kind: Literal["v0", "v1", "episode"], result: EvaluationResult,
                        *, decision: Decision, baseline: EvaluationResult | None = None,
                        **fields: Any) -> VersionRecord:
        """Fill performance, correctness and summary numbers from an evaluation (speedups vs `baseline`)."""
        base = {w.id: w.latency_us for w in baseline.workloads} if baseline else {}
        perf = [
            ShapePerformance(
                id=w.id, status=w.status, latency_us=w.latency_us,
                reference_latency_us=w.reference_latency_us, utilization_pct=w.utilization_pct,
                sol_bound_us=w.sol_bound_us,
                speedup_vs_v0=(base[w.id] / w.latency_us) if base.get(w.id) and w.latency_us else None)
            for w in result.workloads
        ]
        errs_abs = [w.max_abs_error for w in result.workloads if w.max_abs_error is not None]
        errs_rel = [w.max_rel_error for w in result.workloads if w.max_rel_error is not None]
        correctness = Correctness(
            status=result.status, seeds=list(result.seeds),
            max_abs_error=max(errs_abs) if errs_abs else None,
            max_rel_error=max(errs_rel) if errs_rel else None,
            failed_workloads=[w.id for w in result.workloads if w.status != "PASS"],
            message=result.message)
        values: dict[str, Any] = dict(
            version=version, kind=kind, decision=decision, kernel_sha256=result.kernel_sha256 or None,
            objective=result.summary.objective, geomean_latency_us=result.summary.geomean_latency_us,
            utilization_pct=result.summary.geomean_utilization_pct, timing_method=result.timing_method,
            authoritative=result.authoritative, performance=perf, correctness=correctness)
        values.update(fields)
        return cls(**values)


class LiveRecord(BaseModel):
    """What the campaign is doing right now; `memory/live.json` (rewritten as the episode runs)."""

    episode: int | None = None
    mode: Literal["fast", "full"] | None = None
    node: str = ""
    trial: int | None = None
    incumbent_version: int | None = None
    incumbent_objective: float | None = None
    best_trial_objective: float | None = None
    tokens_spent: int = 0
    message: str = ""
    updated_at: str = Field(default_factory=_now)


def atomic_write_text(path: Path, text: str) -> Path:
    """Write via a temporary file in the same directory, fsync, then rename over the target."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def version_path(ws_root: Path, version: int) -> Path:
    return CampaignLayout(Path(ws_root)).version_record(version)


def write_version_record(ws_root: Path, version: int, record: VersionRecord) -> Path:
    if record.version != version:
        raise ValueError(f"record says version {record.version} but is written as v{version}")
    return atomic_write_text(version_path(ws_root, version), record.model_dump_json(indent=2) + "\n")


def write_live(ws_root: Path, record: LiveRecord) -> Path:
    path = CampaignLayout(Path(ws_root)).live_record
    return atomic_write_text(path, record.model_dump_json(indent=2) + "\n")


def read_live(ws_root: Path) -> LiveRecord | None:
    path = CampaignLayout(Path(ws_root)).live_record
    return LiveRecord.model_validate_json(path.read_text()) if path.is_file() else None


def read_version_records(ws_root: Path) -> list[VersionRecord]:
    """Every `memory/v<N>.json`, ordered by version; a malformed one raises naming the file."""
    directory = CampaignLayout(Path(ws_root)).memory_dir
    found: list[tuple[int, Path]] = []
    if directory.is_dir():
        for p in directory.iterdir():
            m = VERSION_FILE.match(p.name)
            if m:
                found.append((int(m.group(1)), p))
    records = []
    for _, p in sorted(found):
        try:
            records.append(VersionRecord.model_validate_json(p.read_text()))
        except ValueError as e:
            raise ValueError(f"{p} is not a valid version record: {e}") from e
    return records
