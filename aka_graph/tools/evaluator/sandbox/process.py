"""Run one process tree under a hard deadline and leave nothing behind.

The child gets its own session; a watchdog thread, not the child's cooperation, enforces the deadline:
SIGTERM to the process group and every member of the session, a grace period, then SIGKILL. Output goes
to files, so a grandchild holding a pipe open can never hang the caller.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

KILL_GRACE_S = 2.0


@dataclass(frozen=True)
class ProcessOutcome:
    returncode: int  # the shell convention: 128 + signal for a signalled child
    timed_out: bool
    wall_s: float


def session_members(session_id: int) -> list[int]:
    """Live pids whose session is `session_id` (catches children that left the process group)."""
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[3]) == session_id:
            members.append(int(entry.name))
    return members


def _signal_tree(leader: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, sig)
    for pid in session_members(leader):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def kill_tree(leader: int, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM the session/group of `leader`, wait up to `grace_s`, then SIGKILL whatever is left."""
    _signal_tree(leader, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and session_members(leader):
        time.sleep(0.02)
    _signal_tree(leader, signal.SIGKILL)


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
