"""`python -m aka_graph stop`: end a running campaign cleanly. Writes the stop request the runner checks
between steps, terminates the process groups of its agent CLIs and sandbox jobs (they run in their own
sessions), and signals the runner, which records the stop; `run`/`resume` continues later."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Annotated

import typer

from aka_graph.process_tree import descendants, kill_trees

AGENT_GRACE_S = 0.5


def child_groups(pid: int) -> set[int]:
    """Process groups of `pid`'s descendants other than its own (agent CLIs and jobs run in their own)."""
    try:
        own = os.getpgid(pid)
    except OSError:
        return set()
    groups = set()
    for child in descendants(pid):
        with contextlib.suppress(OSError):
            groups.add(os.getpgid(child))
    return groups - {own, os.getpgid(0)}


def stop_campaign(workspace: Path, thread_id: str, grace_s: float = 10.0) -> bool:
    """Stop one running campaign; True if a running campaign was found.

    Order matters: the runner is signalled first (it records the stop and exits at once, so no node goes
    on with a half-killed agent), then the agent and job process groups it leaves behind are terminated.
    """
    from aka_graph.commands.status import pid_alive
    from aka_graph.runner import control_path

    control_path(workspace, thread_id, "stop").write_text("stop requested\n")
    pid = pid_alive(control_path(workspace, thread_id, "pid"))
    if pid is None:
        return False
    groups = child_groups(pid)
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and pid_alive(control_path(workspace, thread_id, "pid")) == pid:
        time.sleep(0.05)
    with contextlib.suppress(OSError):
        os.kill(pid, 0)
        os.kill(pid, signal.SIGKILL)  # did not exit in time: end it like a crash (resume handles that)
    kill_trees(groups, grace_s=AGENT_GRACE_S)
    return True


def register(app: typer.Typer) -> None:
    @app.command(
        "stop",
        epilog="Exit status: 0 stopped (the stopped `run`/`resume` exits 3); 1 no running campaign found.",
    )
    def stop(
        workspace: Annotated[Path, typer.Option(help="The --workspace of the running campaign.")] = Path("."),
        campaign: Annotated[
            str | None, typer.Option(help="Campaign name; default: every running one.")
        ] = None,
    ) -> None:
        """Stop running campaign(s) cleanly; `run` or `resume` continues them later."""
        from aka_graph.runner import list_threads

        workspace = workspace.resolve()
        threads = [campaign] if campaign else list_threads(workspace)
        stopped = [tid for tid in threads if stop_campaign(workspace, tid)]
        if not stopped:
            typer.echo(f"no running campaign under {workspace}", err=True)
            raise typer.Exit(1)
        for tid in stopped:
            typer.echo(f"stopped {tid}")
