"""The campaign's final report: `report/report.md` and `report/objective.png`, built from records only.

Everything in it comes from `memory/vN.json` and the ledger (never from graph state), so the report of a
resumed or finished campaign can be rebuilt at any time with `python -m aka_graph report DIR`.
"""

from __future__ import annotations

import json
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from aka_graph.tools.records.layout import CampaignLayout
from aka_graph.tools.records.ledger import Ledger
from aka_graph.tools.records.memory import VersionRecord, atomic_write_text

KEPT = ("baseline", "pinned", "promoted")
COLORS = {"baseline": "tab:blue", "pinned": "tab:cyan", "promoted": "tab:green", "rejected": "tab:gray",
          "incorrect": "tab:red", "forbidden_edit": "tab:purple", "policy_rejected": "tab:orange"}


def _fmt(value: float | None, digits: int = 2, suffix: str = "") -> str:
    return "—" if value is None else f"{value:,.{digits}f}{suffix}"


def cell(text: str, limit: int) -> str:
    """`text` as one Markdown table cell of at most `limit` characters: whitespace collapsed, `|` escaped,
    and a longer text cut at the last word boundary with "…" (never mid-word: a cut reason must stay
    readable, and the full text is in the ledger and `memory/vN.json`)."""
    text = " ".join(text.split()).replace("|", "/")
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    boundary = cut.rfind(" ")
    if boundary >= limit // 2:  # a single very long token (a path, a digest) is cut where it must be
        cut = cut[:boundary]
    return cut.rstrip(" ,;:") + "…"


def incumbent_of(records: list[VersionRecord]) -> VersionRecord | None:
    kept = [r for r in records if r.decision in KEPT]
    return kept[-1] if kept else None


def speedup(v0: VersionRecord | None, record: VersionRecord) -> float | None:
    if v0 is None or not v0.objective or not record.objective:
        return None
    return v0.objective / record.objective


def token_spend(records: list[VersionRecord], ledger: Ledger | None) -> int:
    """Tokens over every agent session: the ledger's count, else what the records carry."""
    counted = ledger.token_total() if ledger is not None else 0
    return counted or sum(r.tokens.total for r in records if r.tokens is not None)


def plot_objective(records: list[VersionRecord], path: Path) -> Path:
    """Objective per version (kept versions joined by the incumbent line) and utilization per version."""
    fig = Figure(figsize=(8, 6.5), dpi=100)
    FigureCanvasAgg(fig)
    ax_obj, ax_util = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    measured = [r for r in records if r.objective is not None]
    for r in measured:
        ax_obj.scatter(r.version, r.objective, color=COLORS.get(r.decision, "black"), zorder=3,
                       label=r.decision)
    failed = [r for r in records if r.objective is None]
    if failed and measured:
        floor = min(r.objective for r in measured if r.objective is not None)
        ax_obj.scatter([r.version for r in failed], [floor] * len(failed), marker="x", color="tab:red",
                       zorder=3, label="no objective")
    incumbent_x, incumbent_y, best = [], [], None
    for r in records:
        if r.decision in KEPT and r.objective is not None:
            best = r.objective
        if best is not None:
            incumbent_x.append(r.version)
            incumbent_y.append(best)
    if incumbent_x:
        ax_obj.step(incumbent_x, incumbent_y, where="post", color="tab:green", alpha=0.6, label="incumbent")
    handles, labels = ax_obj.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    if unique:
        ax_obj.legend(unique.values(), unique.keys(), fontsize=8)
    ax_obj.set_ylabel("objective (lower is better)")
    ax_obj.set_title("Objective per version")
    ax_obj.grid(alpha=0.3)
    util = [r for r in records if r.utilization_pct is not None]
    if util:
        ax_util.bar([r.version for r in util], [r.utilization_pct for r in util],
                    color=[COLORS.get(r.decision, "black") for r in util])
    else:
        ax_util.text(0.5, 0.5, "no utilization measured (no SOL bound or no GPU)", ha="center", va="center",
                     transform=ax_util.transAxes, fontsize=9)
    ax_util.set_ylabel("utilization (%)")
    ax_util.set_xlabel("version")
    ax_util.grid(alpha=0.3)
    if records:
        ax_util.set_xticks([r.version for r in records])
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def render_markdown(ws_root: Path, records: list[VersionRecord], ledger: Ledger | None,
                    plot_name: str) -> str:
    marker = CampaignLayout(ws_root).marker
    identity = json.loads(marker.read_text()) if marker.is_file() else {}
    title = identity.get("op_name", ws_root.name)
    v0 = next((r for r in records if r.kind == "v0"), None)
    inc = incumbent_of(records)
    lines = [f"# Campaign report: {title}", ""]
    if identity:
        lines.append(f"Framework **{identity.get('framework')}**, platform **{identity.get('platform')}**, "
                     f"{'production' if identity.get('production') else 'leaderboard'} mode.")
        lines.append("")
    methods = sorted({r.timing_method for r in records if r.timing_method})
    incumbent = f"v{inc.version} ({inc.decision}, commit {(inc.commit or '')[:10]})" if inc else "—"
    lines += ["## Summary", "",
              f"- Versions recorded: {len(records)}; promoted: "
              f"{sum(r.decision == 'promoted' for r in records)}",
              f"- Incumbent: {incumbent}",
              f"- Best speedup vs V0: {_fmt(speedup(v0, inc) if inc else None, 2, 'x')}",
              f"- Utilization reached: {_fmt(inc.utilization_pct if inc else None, 1, ' %')}",
              f"- Token spend (every agent session): {token_spend(records, ledger):,}",
              f"- Timing: {', '.join(methods) or '—'}"]
    if any(r.authoritative is False for r in records):
        lines.append("- Note: some timings are NOT authoritative (host timing under the Triton interpreter); "
                     "they order candidates on this machine only.")
    lines += ["", f"![objective per version]({plot_name})", "", "## Versions", "",
              "| version | kind | episode | decision | objective | geomean latency (µs) | speedup vs V0 "
              "| utilization | timing | commit | reason |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in records:
        lines.append(
            f"| v{r.version} | {r.kind} | {r.episode if r.episode is not None else '—'} | {r.decision} "
            f"| {_fmt(r.objective)} | {_fmt(r.geomean_latency_us)} | {_fmt(speedup(v0, r), 2, 'x')} "
            f"| {_fmt(r.utilization_pct, 1, ' %')} | {r.timing_method or '—'} | {(r.commit or '—')[:10]} "
            f"| {cell(r.reason, 240)} |")
    decisions = ledger.decisions() if ledger is not None else []
    if decisions:
        lines += ["", "## Decisions", "", "| episode | step | decision | numbers | reason |",
                  "| --- | --- | --- | --- | --- |"]
        for d in decisions:
            lines.append(f"| {d.episode if d.episode is not None else '—'} | {d.kind} | {d.decision} "
                         f"| {_numbers(d.numbers)} | {cell(d.message, 320)} |")
    entries = ledger.entries() if ledger is not None else []
    if entries:
        lines += ["", "## Evaluations (ledger)", "",
                  "| episode | trial | role | status | objective | kernel sha256 | note |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for e in entries:
            note = cell(e.message.splitlines()[0], 160) if e.message else ""
            lines.append(f"| {e.episode if e.episode is not None else '—'} "
                         f"| {e.trial if e.trial is not None else '—'} | {e.role} | {e.status} "
                         f"| {_fmt(e.objective)} | {e.kernel_sha256[:12]} | {note} |")
    if inc and inc.performance:
        v0_latency = {p.id: p.latency_us for p in (v0.performance if v0 else [])}
        lines += ["", f"## Incumbent v{inc.version} per shape", "",
                  "| workload | latency (µs) | V0 latency (µs) | speedup vs V0 | utilization |",
                  "| --- | --- | --- | --- | --- |"]
        for p in inc.performance:
            base = v0_latency.get(p.id)
            ratio = p.speedup_vs_v0 or (base / p.latency_us if base and p.latency_us else None)
            lines.append(f"| {p.id} | {_fmt(p.latency_us)} | {_fmt(base)} | {_fmt(ratio, 2, 'x')} "
                         f"| {_fmt(p.utilization_pct, 1, ' %')} |")
    return "\n".join(lines) + "\n"


NUMBER_KEYS = ("improvement_pct", "p_value", "t_stat", "per_repeat_ratio", "repeats", "pattern",
               "worst_shape", "worst_shape_regression_pct", "timing_method", "incumbent_sha256",
               "candidate_sha256")


def _short(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, str) and len(value) > 16:
        return value[:12] + "…"
    if isinstance(value, list):
        shown = ", ".join(_short(v) for v in value[:5])
        return f"[{shown}{', …' if len(value) > 5 else ''}]"
    return str(value)


def _numbers(numbers: dict[str, object]) -> str:
    """The deciding numbers first (or everything when none of the usual keys is there)."""
    keys = [k for k in NUMBER_KEYS if k in numbers] or sorted(numbers)
    return ", ".join(f"{k}={_short(numbers[k])}" for k in keys).replace("|", "/")


def write_final_report(ws_root: Path, records: list[VersionRecord], ledger: Ledger | None) -> Path:
    """Write `report/report.md` (+ `report/objective.png`) under the campaign root; returns the Markdown."""
    ws_root = Path(ws_root)
    out = CampaignLayout(ws_root).report_dir
    plot = plot_objective(records, out / "objective.png")
    return atomic_write_text(out / "report.md", render_markdown(ws_root, records, ledger, plot.name))
