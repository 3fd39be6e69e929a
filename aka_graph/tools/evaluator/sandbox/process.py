"""Run one process tree under a hard deadline and leave nothing behind.

The child gets its own session; a watchdog thread, not the child's cooperation, enforces the deadline:
SIGTERM to the process group and every member of the session, a grace period, then SIGKILL
(`aka_graph.process_tree.kill_tree`, shared with the agent CLIs). Output goes
to files, so a grandchild holding a pipe open can never hang the caller.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aka_graph.process_tree import KILL_GRACE_S, kill_tree

__all__ = ["KILL_GRACE_S", "ProcessOutcome", "run_tree"]


@dataclass(frozen=True)
class ProcessOutcome:
    returncode: int  # the shell convention: 128 + signal for a signalled child
    timed_out: bool
    wall_s: float


def run_tree(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    stdout_path: Path,
    stderr_path: Path,
    stdin_fd: int | None = None,
    grace_s: float = KILL_GRACE_S,
) -> ProcessOutcome:
    """Run `argv` in its own session; past `timeout_s` the whole tree is killed and `timed_out` is set."""
    started = time.monotonic()
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL if stdin_fd is None else stdin_fd,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
    fired = threading.Event()

    def watchdog() -> None:
        fired.set()
        kill_tree(proc.pid, grace_s)

    timer = threading.Timer(timeout_s, watchdog)
    timer.daemon = True
    timer.start()
    try:
        returncode = proc.wait()
    finally:
        timer.cancel()
    if fired.is_set():
        timer.join()  # the watchdog finishes its TERM -> KILL sequence before we report
    else:
        kill_tree(proc.pid, grace_s=0.2)  # background leftovers of a finished command die with the job
    wall = time.monotonic() - started
    if returncode < 0:
        returncode = 128 - returncode
    return ProcessOutcome(returncode=returncode, timed_out=fired.is_set(), wall_s=wall)
