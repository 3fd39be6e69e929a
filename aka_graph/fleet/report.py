"""`fleet status` and `fleet report`: the fleet's campaigns as a table, and speedups by operator as a plot."""

from __future__ import annotations

from pathlib import Path

from aka_graph.fleet.checkpointer import campaign_thread_id
from aka_graph.fleet.registry import CampaignRow

COLUMNS = ("campaign", "state", "node", "incumbent", "speedup", "budget spent", "host", "note")


def _state(row: CampaignRow) -> str:
    if row.stop_requested and row.state in ("running", "queued"):
        return f"{row.state} (stopping)"
    return row.state


def _budget(row: CampaignRow) -> str:
    spent = f"{row.tokens_spent:,} tok"
    if row.token_budget:
        spent += f" ({100 * row.tokens_spent / row.token_budget:.0f}%)"
    episodes = f"ep {row.episode}" if row.episode else "ep 0"
    return f"{episodes}, {spent}"


def status_rows(rows: list[CampaignRow]) -> list[tuple[str, ...]]:
    out = []
    for row in rows:
        incumbent = (
            f"v{row.incumbent_version} {row.incumbent_objective:.4g}"
            if row.incumbent_version is not None and row.incumbent_objective is not None
            else "-"
        )
        speedup = f"{row.speedup:.3f}x" if row.speedup is not None else "-"
        note = row.stop_reason or row.message or ""
        out.append(
            (
                row.id,
                _state(row),
                row.node or "-",
                incumbent,
                speedup,
                _budget(row),
                row.last_host or "-",
                note,
            )
        )
    return out


def format_table(rows: list[tuple[str, ...]], columns: tuple[str, ...] = COLUMNS) -> str:
    """A plain aligned text table (no terminal codes: it goes to logs and CI output as is)."""
    widths = [max(len(str(c)), *(len(str(r[i])) for r in rows)) for i, c in enumerate(columns)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def speedup_plot(rows: list[CampaignRow], path: Path) -> Path:
    """Bars of the incumbent's speedup over V0 per operator, one bar per framework; a PNG at `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    operators = sorted({r.op_name for r in rows})
    frameworks = sorted({r.framework for r in rows})
    width = 0.8 / max(len(frameworks), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(operators) + 2), 4.5))
    for k, framework in enumerate(frameworks):
        values = []
        for op in operators:
            found = [r.speedup for r in rows if r.op_name == op and r.framework == framework and r.speedup]
            values.append(max(found) if found else 0.0)
        positions = [i + (k - (len(frameworks) - 1) / 2) * width for i in range(len(operators))]
        ax.bar(positions, values, width=width, label=framework)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(operators)), operators, rotation=30, ha="right")
    ax.set_ylabel("speedup over V0 (x)")
    ax.set_title("Fleet: best incumbent speedup by operator")
    ax.legend(title="framework")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def report_markdown(rows: list[CampaignRow], plot: Path | None) -> str:
    finished = sum(r.state == "finished" for r in rows)
    lines = [
        "# Fleet report",
        "",
        f"{len(rows)} campaigns, {finished} finished.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(v.replace("|", "/") for v in r) + " |" for r in status_rows(rows)]
    lines += ["", "LangGraph threads (for Studio on `aka_graph/fleet/langgraph.json`):", ""]
    lines += [f"- {r.id}: `{campaign_thread_id(r.id)}`" for r in rows]
    if plot is not None:
        lines += ["", f"![speedups by operator]({plot.name})"]
    return "\n".join(lines) + "\n"
