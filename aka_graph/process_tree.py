"""Ending a process tree, in one place: agent CLIs (`cli_agents/process.py`), local sandbox jobs
(`tools/evaluator/sandbox/process.py`) and `stop` all start or find trees and must leave nothing behind.

A tree is started in its own session (`start_new_session=True`), so its leader's pid is both its process
group and its session id. Signalling the group reaches everything that stayed in it; signalling every
member of the session also reaches children that moved to a process group of their own (they cannot
leave the session without `setsid`). Read from /proc with the standard library only: the coordinator
needs nothing beyond it (the GPU-side harness has its own copy, `harness/proctree.py`, since it is
uploaded alone into sandbox jobs).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

KILL_GRACE_S = 2.0


def _stat_fields(pid: str) -> list[str] | None:
    """`/proc/<pid>/stat` after the command name: [state, ppid, pgrp, session, ...]; None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()


def _processes() -> list[tuple[int, list[str]]]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (fields := _stat_fields(entry.name)) is not None:
            found.append((int(entry.name), fields))
    return found


def session_members(session_id: int) -> list[int]:
    """Live (not zombie) pids whose session is `session_id`, whatever their process group."""
    return [pid for pid, f in _processes() if f[0] != "Z" and int(f[3]) == session_id]


def descendants(pid: int) -> list[int]:
    """Every process below `pid` by parent links, children before grandchildren."""
    children: dict[int, list[int]] = {}
    for child, fields in _processes():
        children.setdefault(int(fields[1]), []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(0), []):
            found.append(child)
            todo.append(child)
    return found


def signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to a process group; False when the group is gone (or no longer ours to signal)."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def group_alive(pgid: int) -> bool:
    """Whether any process of the group still exists (zombies included until they are reaped)."""
    return signal_group(pgid, 0)


def signal_tree(leader: int, sig: int) -> None:
    """`sig` to the leader's process group and to every member of its session."""
    signal_group(leader, sig)
    for pid in session_members(leader):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def tree_alive(leader: int) -> bool:
    return bool(session_members(leader))


def kill_tree(leader: int, grace_s: float = KILL_GRACE_S, poll_s: float = 0.02) -> None:
    """SIGTERM the tree of `leader`, wait up to `grace_s` for it to end, then SIGKILL whatever is left."""
    kill_trees([leader], grace_s, poll_s)


def kill_trees(leaders: Iterable[int], grace_s: float = KILL_GRACE_S, poll_s: float = 0.02) -> None:
    """`kill_tree` for several trees at once (one grace period for all of them)."""
    leaders = list(leaders)
    for leader in leaders:
        signal_tree(leader, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(tree_alive(leader) for leader in leaders):
        time.sleep(poll_s)
    for leader in leaders:
        signal_tree(leader, signal.SIGKILL)


def wait_group_gone(pgid: int, timeout_s: float, poll_s: float = 0.02) -> bool:
    """Killed orphans linger as zombies until init reaps them: wait (briefly) until the group is empty."""
    deadline = time.monotonic() + timeout_s
    while group_alive(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(poll_s)
    return True
