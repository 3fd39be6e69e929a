"""`python -m aka_graph status`: budget spent, versions, incumbent and what is running now, per campaign,
read from the checkpoint, the version records and `memory/live.json` (safe while a campaign runs)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer


def pid_alive(pid_file: Path) -> int | None:
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def campaign_status(workspace: Path) -> list[dict[str, Any]]:
    from aka_graph.runner import compile_graph, control_path, list_threads, open_checkpointer, thread_config
    from aka_graph.thread_phase import thread_phase
    from aka_graph.tools.records.memory import read_live, read_version_records

    rows: list[dict[str, Any]] = []
    threads = list_threads(workspace)
    if not threads:
        return rows
    with open_checkpointer(workspace) as saver:
        compiled = compile_graph(saver)
        for tid in threads:
            snap = compiled.get_state(thread_config(tid))
            values = snap.values or {}
            config = values.get("config")
            root = Path(values["workspace_root"]) if values.get("workspace_root") else None
            records = read_version_records(root) if root and root.is_dir() else []
            live = read_live(root) if root and root.is_dir() else None
            inc = values.get("incumbent")
            pid = pid_alive(control_path(workspace, tid, "pid"))
            rows.append(
                {
                    "campaign": tid,
                    "state": "running" if pid else thread_phase(snap),
                    "pid": pid,
                    "next": list(snap.next),
                    "episode": values.get("episode"),
                    "trial": values.get("trial"),
                    "tokens_spent": values.get("tokens_spent", 0),
                    "token_budget": config.token_budget if config else None,
                    "agent_sessions": values.get("agent_sessions", 0),
                    "stalls": values.get("stalls", 0),
                    "incumbent": {"version": inc.version, "objective": inc.objective, "commit": inc.commit}
                    if inc
                    else None,
                    "versions": [
                        {
                            "version": r.version,
                            "decision": r.decision,
                            "objective": r.objective,
                            "reason": r.reason[:120],
                        }
                        for r in records
                    ],
                    "live": live.model_dump() if live else None,
                    "stop_reason": values.get("stop_reason"),
                    "report": values.get("report_path"),
                }
            )
    return rows


def register(app: typer.Typer) -> None:
    @app.command("status")
    def status(
        workspace: Annotated[Path, typer.Option(help="The --workspace of the campaign(s).")] = Path("."),
        as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    ) -> None:
        """Show each campaign's budget spent, versions, incumbent and current step."""
        rows = campaign_status(workspace.resolve())
        if as_json:
            typer.echo(json.dumps(rows, indent=2, default=str))
            return
        if not rows:
            typer.echo(f"no campaign checkpoints under {workspace.resolve()}/checkpoints")
            raise typer.Exit(1)
        for row in rows:
            budget = f"/{row['token_budget']}" if row["token_budget"] else ""
            inc = row["incumbent"]
            typer.echo(
                f"{row['campaign']}: {row['state']}"
                + (f" (pid {row['pid']})" if row["pid"] else "")
                + (f", next: {', '.join(row['next'])}" if row["next"] else "")
                + (f", stopped: {row['stop_reason']}" if row["stop_reason"] else "")
            )
            typer.echo(
                f"  tokens {row['tokens_spent']}{budget} over {row['agent_sessions']} agent sessions; "
                f"episode {row['episode']}, trial {row['trial']}, stalls {row['stalls']}"
            )
            typer.echo(
                f"  incumbent: v{inc['version']} objective={inc['objective']}" if inc else "  incumbent: -"
            )
            live = row["live"]
            if live and row["state"] != "finished":
                typer.echo(f"  now: {live['node']} — {live['message']}")
            for v in row["versions"]:
                typer.echo(
                    f"  v{v['version']}: {v['decision']:<15} objective={v['objective']}  {v['reason']}"
                )
