"""The per-framework campaigns of one `run` without `--framework`, side by side: one row per campaign
(its framework, V0, V1, the incumbent, its speedup over V0 and utilization, promotions, tokens), written
as `frameworks.md` beside the campaign directories. Every number is read back from each campaign's own
`memory/vN.json` records and ledger, so the table says what the campaigns decided, nothing new."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aka_graph.tools.records.layout import CampaignLayout
from aka_graph.tools.records.ledger import Ledger
from aka_graph.tools.records.memory import VersionRecord, atomic_write_text, read_version_records
from aka_graph.tools.records.report import _fmt, cell, incumbent_of, speedup, token_spend

COMPARISON_FILE = "frameworks.md"


@dataclass(frozen=True)
class FrameworkRow:
    framework: str
    campaign: str
    v0: VersionRecord | None
    v1: VersionRecord | None
    incumbent: VersionRecord | None
    promotions: int
    episodes: int
    tokens: int


def framework_row(framework: str, ws_root: Path) -> FrameworkRow:
    """One campaign's row, from its records (an unstarted campaign: every cell empty)."""
    ws_root = Path(ws_root)
    records = read_version_records(ws_root) if (ws_root / "memory").is_dir() else []
    ledger_path = CampaignLayout(ws_root).ledger
    ledger = Ledger(ledger_path) if ledger_path.is_file() else None
    return FrameworkRow(
        framework=framework,
        campaign=ws_root.name,
        v0=next((r for r in records if r.kind == "v0"), None),
        v1=next((r for r in records if r.kind == "v1"), None),
        incumbent=incumbent_of(records),
        promotions=sum(r.decision == "promoted" for r in records),
        episodes=sum(r.kind == "episode" for r in records),
        tokens=token_spend(records, ledger),
    )


def render_comparison(rows: list[FrameworkRow]) -> str:
    """The Markdown table, fastest incumbent first (campaigns without one last)."""
    ordered = sorted(rows, key=lambda r: (r.incumbent is None or r.incumbent.objective is None,
                                          r.incumbent.objective if r.incumbent and r.incumbent.objective
                                          else 0.0, r.framework))
    lines = [
        "# Frameworks side by side",
        "",
        "One campaign per framework, same operator and GPU (objective: lower is better).",
        "",
        "| framework | V0 objective | V1 | incumbent | objective | speedup vs V0 | utilization | promotions "
        "| tokens | campaign |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in ordered:
        inc = row.incumbent
        v1 = f"{row.v1.decision} ({_fmt(row.v1.objective)})" if row.v1 else "—"
        lines.append(
            f"| {row.framework} | {_fmt(row.v0.objective if row.v0 else None)} | {cell(v1, 40)} "
            f"| {f'v{inc.version}' if inc else '—'} | {_fmt(inc.objective if inc else None)} "
            f"| {_fmt(speedup(row.v0, inc) if inc else None, suffix='x')} "
            f"| {_fmt(inc.utilization_pct if inc else None, 1, '%')} | {row.promotions}/{row.episodes} "
            f"| {row.tokens:,} | {row.campaign} |"
        )
    return "\n".join(lines) + "\n"


def write_comparison(parent: Path, campaigns: list[tuple[str, Path]]) -> Path:
    """`<parent>/frameworks.md` for (framework, campaign root) pairs."""
    rows = [framework_row(framework, root) for framework, root in campaigns]
    return atomic_write_text(Path(parent) / COMPARISON_FILE, render_comparison(rows))
