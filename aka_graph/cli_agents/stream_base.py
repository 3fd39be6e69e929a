"""The common shape of a CLI stream parser: fed one stdout line at a time, it knows the session id,
the running token total, the final text and whether the CLI reported a failure.

Parsers are tolerant: a malformed or truncated line is counted and skipped, never fatal, because a
killed CLI often leaves half a line behind.
"""

from __future__ import annotations

import json
from typing import Any

from aka_graph.cli_agents.base import TokenUsage


class StreamParser:
    """Base class; subclasses implement `handle(event)` and `tokens()`."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.final_text: str = ""
        self.failed: bool = False
        self.error: str = ""
        self.malformed_lines: int = 0
        self.events: int = 0

    def feed(self, line: str) -> bool:
        """Parse one line; True when the running token total may have changed."""
        line = line.strip()
        if not line:
            return False
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            self.malformed_lines += 1
            return False
        if not isinstance(event, dict):
            self.malformed_lines += 1
            return False
        self.events += 1
        return bool(self.handle(event))

    def feed_text(self, text: str) -> StreamParser:
        """Feed a whole recorded stream (tests, re-parsing a transcript)."""
        for line in text.split("\n"):
            self.feed(line)
        return self

    def handle(self, event: dict[str, Any]) -> bool:
        raise NotImplementedError

    def text(self) -> str:
        """The agent's final message."""
        return self.final_text

    def tokens(self) -> TokenUsage:
        raise NotImplementedError


def as_int(value: Any) -> int:
    """A token count from JSON: non-numbers count as 0 (never crash on a surprising field)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float):
        return max(int(value), 0)
    return 0


def usage(input_: int, output: int, cache_read: int, cache_write: int, accuracy: str) -> TokenUsage:
    """A `TokenUsage` whose total is every token processed: input (uncached) + output + cache read/write."""
    return TokenUsage(
        input=input_,
        output=output,
        cache_read=cache_read,
        cache_write=cache_write,
        total=input_ + output + cache_read + cache_write,
        accuracy=accuracy,  # type: ignore[arg-type]
    )
