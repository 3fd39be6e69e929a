"""Live progress of a campaign: a rich panel on a terminal (node, episode, trial, tokens, best so far,
elapsed — redrawn on its own, so the clock moves between events), plain timestamped log lines otherwise
(CI, pipes, `nohup`), with a heartbeat line whenever a step has been quiet for `heartbeat_s` (an
evaluation or an agent turn can take minutes; silence would look like a hang)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

HEARTBEAT_S = 15.0
"""Longest silence of the plain output during a step (a heartbeat line is printed after it)."""


class Progress:
    """Consumes the runner's `stream(..., stream_mode=["tasks", "custom", "updates"])` chunks.

    `clock` (seconds, monotonic) is injectable so tests drive the heartbeat and the elapsed time.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        live: bool = False,
        label: str = "",
        *,
        clock: Callable[[], float] = time.monotonic,
        heartbeat_s: float | None = HEARTBEAT_S,
        tick_s: float = 1.0,
    ) -> None:
        self.stream = stream or sys.stderr
        self.label = f"[{label}] " if label else ""
        self.clock = clock
        self.node = "-"
        self.episode: int | None = None
        self.kind = ""
        self.trial: int | None = None
        self.tokens = 0
        self.best: float | None = None
        self.incumbent: str = "-"
        self.last = ""
        self.started = clock()
        self.step_started = self.started
        self.last_line_at = self.started
        self.heartbeat_s = heartbeat_s
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._live: Live | None = None
        if live:
            self._live = Live(
                get_renderable=self._table,  # redrawn by Live's own thread: `elapsed` moves between events
                console=Console(file=self.stream),
                refresh_per_second=2,
                transient=False,
            )
            self._live.start()
        elif heartbeat_s is not None:
            beats = threading.Thread(target=self._beat_loop, args=(tick_s,), name="heartbeat", daemon=True)
            beats.start()

    @classmethod
    def for_terminal(cls, quiet: bool = False) -> Progress:
        if quiet:
            return Progress(stream=_Null(), heartbeat_s=None)
        return cls(live=sys.stderr.isatty())

    def resume_from(self, values: Mapping[str, Any]) -> None:
        """Start from a checkpoint's values, so a resumed campaign's lines show what it has already spent
        and kept (tokens, episode, trial, incumbent, best) instead of zeros."""
        with self._lock:
            self.tokens = int(values.get("tokens_spent") or 0)
            self.episode = values.get("episode") or None
            self.kind = values.get("episode_kind") or ""
            self.trial = values.get("trial") or None
            candidate = values.get("candidate")
            self.best = getattr(candidate, "objective", None) if candidate is not None else None
            inc = values.get("incumbent")
            if inc is not None:
                self.incumbent = f"v{inc.version} ({_fmt(inc.objective)})"

    def log(self, line: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        with self._lock:
            self.last_line_at = self.clock()
        if self._live is not None:
            self._live.console.print(Text.assemble((stamp, "dim"), f" {self.label}{line}"), highlight=False)
        else:
            print(f"{stamp} {self.label}{line}", file=self.stream, flush=True)

    def beat(self) -> bool:
        """Print a heartbeat line if nothing was printed for `heartbeat_s`; True when it printed one."""
        if self.heartbeat_s is None or self._live is not None:
            return False
        now = self.clock()
        with self._lock:
            if now - self.last_line_at < self.heartbeat_s:
                return False
            where = self.node
            if self.episode:
                where += f" (episode {self.episode}" + (f", trial {self.trial})" if self.trial else ")")
            in_step, in_all = now - self.step_started, now - self.started
        self.log(f"… still in {where}: {in_step:.0f}s in this step, {in_all:.0f}s in all | {self._totals()}")
        return True

    def _beat_loop(self, tick_s: float) -> None:
        while not self._closed.wait(tick_s):
            self.beat()

    def handle(self, mode: str, payload: Any) -> None:
        if mode == "tasks" and isinstance(payload, dict) and "input" in payload:
            with self._lock:
                self.node = payload.get("name", self.node)
                self.step_started = self.clock()
        elif mode == "updates" and isinstance(payload, dict):
            for update in payload.values():
                if isinstance(update, dict):
                    self._absorb(update)
        elif mode == "custom" and isinstance(payload, dict):
            self._event(payload)
        if self._live is not None:
            self._live.refresh()

    def _absorb(self, update: dict[str, Any]) -> None:
        with self._lock:
            self.tokens += int(update.get("tokens_spent") or 0)
            if "episode" in update:
                self.episode = update["episode"]
                self.kind = update.get("episode_kind", self.kind)
            if "trial" in update:
                self.trial = update["trial"]
            if update.get("candidate") is not None:
                self.best = getattr(update["candidate"], "objective", None)
            inc = update.get("incumbent")
            if inc is not None:
                self.incumbent = f"v{inc.version} ({_fmt(inc.objective)})"

    def _totals(self) -> str:
        return f"tokens={self.tokens} best={_fmt(self.best)} incumbent={self.incumbent}"

    def _event(self, event: dict[str, Any]) -> None:
        node, name = event.get("node", "?"), event.get("event", "?")
        details = " ".join(f"{k}={_fmt(v)}" for k, v in event.items() if k not in ("node", "event"))
        self.last = f"{node}: {name} {details}".strip()
        self.log(f"[{node}] {name} {details} | {self._totals()}")

    def _table(self) -> Table:
        table = Table(title="aka_graph campaign", show_header=False, expand=False)
        now = self.clock()
        for key, value in (
            ("node", f"{self.node} ({now - self.step_started:.0f}s)"),
            ("episode", f"{self.episode or '-'} {self.kind}"),
            ("trial", self.trial or "-"),
            ("tokens", self.tokens),
            ("best so far", _fmt(self.best)),
            ("incumbent", self.incumbent),
            ("last event", self.last[:100]),
            ("elapsed", f"{now - self.started:.0f}s"),
        ):
            table.add_row(key, str(value))
        return table

    def close(self, values: dict[str, Any] | None = None) -> None:
        self._closed.set()
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
            self._live = None


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value) if value is not None else "-"


class _Null:
    def write(self, _: str) -> int:
        return 0

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False
