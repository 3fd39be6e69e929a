"""Live progress of a campaign: a rich panel on a terminal (node, episode, trial, tokens, best so far),
plain timestamped log lines otherwise (CI, pipes, `nohup`)."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table


class Progress:
    """Consumes the runner's `stream(..., stream_mode=["tasks", "custom", "updates"])` chunks."""

    def __init__(self, stream: TextIO | None = None, live: bool = False, label: str = "") -> None:
        self.stream = stream or sys.stderr
        self.label = f"[{label}] " if label else ""
        self.node = "-"
        self.episode: int | None = None
        self.kind = ""
        self.trial: int | None = None
        self.tokens = 0
        self.best: float | None = None
        self.incumbent: str = "-"
        self.last = ""
        self.started = time.monotonic()
        self._live: Live | None = None
        if live:
            self._live = Live(
                self._table(), console=Console(file=self.stream), refresh_per_second=4, transient=False
            )
            self._live.start()

    @classmethod
    def for_terminal(cls, quiet: bool = False) -> Progress:
        if quiet:
            return Progress(stream=_Null())
        return cls(live=sys.stderr.isatty())

    def log(self, line: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        if self._live is not None:
            self._live.console.print(f"[dim]{stamp}[/dim] {self.label}{line}", markup=False, highlight=False)
        else:
            print(f"{stamp} {self.label}{line}", file=self.stream, flush=True)

    def handle(self, mode: str, payload: Any) -> None:
        if mode == "tasks" and isinstance(payload, dict) and "input" in payload:
            self.node = payload.get("name", self.node)
        elif mode == "updates" and isinstance(payload, dict):
            for update in payload.values():
                if isinstance(update, dict):
                    self._absorb(update)
        elif mode == "custom" and isinstance(payload, dict):
            self._event(payload)
        if self._live is not None:
            self._live.update(self._table())

    def _absorb(self, update: dict[str, Any]) -> None:
        self.tokens += int(update.get("tokens_spent") or 0)
        if "episode" in update:
            self.episode = update["episode"]
            self.kind = update.get("episode_kind", self.kind)
        if "trial" in update:
            self.trial = update["trial"]
        if update.get("candidate") is not None:
            cand = update["candidate"]
            self.best = getattr(cand, "objective", None)
        inc = update.get("incumbent")
        if inc is not None:
            self.incumbent = f"v{inc.version} ({_fmt(inc.objective)})"

    def _event(self, event: dict[str, Any]) -> None:
        node, name = event.get("node", "?"), event.get("event", "?")
        details = " ".join(f"{k}={_fmt(v)}" for k, v in event.items() if k not in ("node", "event"))
        self.last = f"{node}: {name} {details}".strip()
        self.log(
            f"[{node}] {name} {details} | tokens={self.tokens} best={_fmt(self.best)} "
            f"incumbent={self.incumbent}"
        )

    def _table(self) -> Table:
        table = Table(title="aka_graph campaign", show_header=False, expand=False)
        for key, value in (
            ("node", self.node),
            ("episode", f"{self.episode or '-'} {self.kind}"),
            ("trial", self.trial or "-"),
            ("tokens", self.tokens),
            ("best so far", _fmt(self.best)),
            ("incumbent", self.incumbent),
            ("last event", self.last[:100]),
            ("elapsed", f"{time.monotonic() - self.started:.0f}s"),
        ):
            table.add_row(key, str(value))
        return table

    def close(self, values: dict[str, Any]) -> None:
        if self._live is not None:
            self._live.update(self._table())
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
