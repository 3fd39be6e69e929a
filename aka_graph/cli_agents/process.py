"""Process control shared by every CLI backend: one place that guarantees an agent can always be stopped.

Each invocation runs with stdin closed, in its own process session (so the whole tree it spawns is one
process group), under a wall-clock deadline; on timeout or stop the group gets SIGTERM, then SIGKILL
after a grace period, and whatever is left of the group is killed once the leader is gone (the signalling
is `aka_graph.process_tree`'s, shared with the sandbox: the group and every member of the session). Raw
stdout and stderr are saved as the transcript; stdout is also handed to the caller line by line while it
streams.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from aka_graph.process_tree import group_alive, signal_tree, wait_group_gone

__all__ = ["ProcessOutcome", "TranscriptPaths", "group_alive", "run_streaming"]

LineHandler = Callable[[str], str | None]
"""Gets each stdout line (without the newline); returns None to continue or a reason to stop the run."""

TERM_GRACE_S = 3.0
DRAIN_AFTER_EXIT_S = 2.0


@dataclass(frozen=True)
class TranscriptPaths:
    """Where one invocation's raw output goes: `<base>.stdout.jsonl`, `.stderr.log` and `.meta.json`."""

    stdout: Path
    stderr: Path
    meta: Path

    @classmethod
    def allocate(cls, transcript_dir: Path, cli: str, role: str) -> TranscriptPaths:
        """Fresh, never-reused file names (several invocations may share one transcript directory)."""
        transcript_dir.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        safe_role = re.sub(r"[^A-Za-z0-9_.-]+", "_", role) or "agent"
        base = transcript_dir / f"{cli}-{safe_role}-{stamp}-{uuid.uuid4().hex[:8]}"
        return cls(
            stdout=base.with_name(base.name + ".stdout.jsonl"),
            stderr=base.with_name(base.name + ".stderr.log"),
            meta=base.with_name(base.name + ".meta.json"),
        )


@dataclass
class ProcessOutcome:
    """How the process ended; `stop_reason` is set when the line handler asked to stop it."""

    exit_code: int
    timed_out: bool
    stop_reason: str | None
    wall_s: float
    pid: int
    transcript: TranscriptPaths
    leftover_killed: bool = False
    extra: dict[str, object] = field(default_factory=dict)


def run_streaming(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    transcript: TranscriptPaths,
    on_line: LineHandler | None = None,
    term_grace_s: float = TERM_GRACE_S,
) -> ProcessOutcome:
    """Run `argv` to completion, timeout or stop; never leaves a process of its group behind."""
    start = time.monotonic()
    deadline = start + timeout_s
    meta: dict[str, object] = {
        "argv": list(argv),
        "cwd": str(cwd),
        "env_keys": sorted(env),
        "timeout_s": timeout_s,
        "started_at": datetime.now(UTC).isoformat(),
    }
    with open(transcript.stdout, "wb") as out_file, open(transcript.stderr, "wb") as err_file:
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            err_file.write(f"could not start {argv[0]}: {exc}\n".encode())
            meta.update(exit_code=127, error=str(exc))
            transcript.meta.write_text(json.dumps(meta, indent=2))
            return ProcessOutcome(127, False, None, 0.0, -1, transcript)
        pgid = proc.pid  # start_new_session: the leader's pid is the group id
        meta["pid"] = meta["pgid"] = pgid
        timed_out = False
        stop_reason: str | None = None
        kill_at: float | None = None
        exited_at: float | None = None
        pending = b""

        def terminate() -> None:
            nonlocal kill_at
            if kill_at is None:
                signal_tree(pgid, signal.SIGTERM)
                kill_at = time.monotonic() + term_grace_s

        sel = selectors.DefaultSelector()
        assert proc.stdout is not None and proc.stderr is not None
        for stream in (proc.stdout, proc.stderr):
            os.set_blocking(stream.fileno(), False)
            sel.register(stream, selectors.EVENT_READ)
        try:
            while sel.get_map():
                now = time.monotonic()
                if not timed_out and stop_reason is None and now >= deadline:
                    timed_out = True
                    terminate()
                if kill_at is not None and now >= kill_at:
                    signal_tree(pgid, signal.SIGKILL)
                if exited_at is None and proc.poll() is not None:
                    exited_at = now
                if exited_at is not None and now - exited_at > DRAIN_AFTER_EXIT_S:
                    break  # the leader is gone; a descendant still holds the pipe: it gets killed below
                for key, _ in sel.select(timeout=0.1):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    if key.fileobj is proc.stderr:
                        err_file.write(chunk)
                        continue
                    out_file.write(chunk)
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for raw in lines:
                        reason = _handle(on_line, raw) if stop_reason is None else None
                        if reason is not None:
                            stop_reason = reason
                            terminate()
            if pending.strip() and stop_reason is None:
                reason = _handle(on_line, pending)  # a last line without its newline (truncated stream)
                if reason is not None:
                    stop_reason = reason
        finally:
            sel.close()
            exit_code = _reap(proc, pgid, term_grace_s)
            leftover = group_alive(pgid)
            if leftover:
                signal_tree(pgid, signal.SIGKILL)
                wait_group_gone(pgid, timeout_s=5.0)
            proc.stdout.close()
            proc.stderr.close()
            wall_s = time.monotonic() - start
            meta.update(
                exit_code=exit_code,
                timed_out=timed_out,
                stop_reason=stop_reason,
                wall_s=round(wall_s, 3),
                leftover_killed=leftover,
            )
            transcript.meta.write_text(json.dumps(meta, indent=2))
    return ProcessOutcome(exit_code, timed_out, stop_reason, wall_s, pgid, transcript, leftover)


def _handle(on_line: LineHandler | None, raw: bytes) -> str | None:
    if on_line is None:
        return None
    return on_line(raw.decode("utf-8", errors="replace").rstrip("\r"))


def _reap(proc: subprocess.Popen[bytes], pgid: int, grace_s: float) -> int:
    """Wait for the leader; if it is still running (we left the loop early), TERM then KILL the group."""
    try:
        return proc.wait(timeout=0.5)
    except subprocess.TimeoutExpired:
        signal_tree(pgid, signal.SIGTERM)
    try:
        return proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        signal_tree(pgid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        return proc.wait(timeout=5)
    return -9
