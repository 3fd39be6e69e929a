"""A small persistent queue of remote job directories still to delete.

A job directory is recorded (as active, with the owning pid) before it is created and dropped once it
is removed; a failed removal marks it failed. The next job retries failed entries and those whose owner
died, so neither a dead host nor a killed coordinator leaves a candidate's files behind for good, and a
job still running in another campaign is never touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

DEFAULT_QUEUE = Path("~/.cache/aka_graph/ssh-cleanup-queue.json")
# Only directories this sandbox creates may ever be removed from the queue's entries.
REMOTE_JOB_DIR = re.compile(r"^/[A-Za-z0-9_./-]*/aka-job-[A-Za-z0-9_-]+$")


class CleanupQueue:
    """Entries `{target, path, since, pid, failed}` in a JSON file, updated under an exclusive file lock."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = (path or DEFAULT_QUEUE).expanduser()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[list[dict[str, object]]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                entries = json.loads(self.path.read_text()) if self.path.exists() else []
            except ValueError:
                entries = []  # a corrupt queue must not stop jobs; it only costs a retry
            before = json.dumps(entries)
            yield entries
            if json.dumps(entries) != before:
                tmp = self.path.with_suffix(f".tmp{os.getpid()}")
                tmp.write_text(json.dumps(entries, indent=1))
                tmp.replace(self.path)

    def add(self, target: str, path: str) -> None:
        if not REMOTE_JOB_DIR.match(path):
            raise ValueError(f"refusing to queue {path!r}: not a sandbox job directory")
        with self._locked() as entries:
            if not any(e["target"] == target and e["path"] == path for e in entries):
                entries.append(
                    {
                        "target": target,
                        "path": path,
                        "since": time.time(),
                        "pid": os.getpid(),
                        "failed": False,
                    }
                )

    def mark_failed(self, target: str, path: str) -> None:
        with self._locked() as entries:
            for entry in entries:
                if entry["target"] == target and entry["path"] == path:
                    entry["failed"] = True

    def remove(self, target: str, path: str) -> None:
        with self._locked() as entries:
            entries[:] = [e for e in entries if not (e["target"] == target and e["path"] == path)]

    def pending(self, target: str) -> list[str]:
        """Directories on `target` to remove now: failed cleanups and those of dead coordinators."""
        with self._locked() as entries:
            return [
                str(e["path"])
                for e in entries
                if e["target"] == target and (e.get("failed") or not _alive(int(e.get("pid", 0))))  # type: ignore[call-overload]
            ]


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
