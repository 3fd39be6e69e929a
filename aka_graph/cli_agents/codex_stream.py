"""Parser of `codex exec --json` stdout.

Codex reports usage in `turn.completed`, cumulative over the whole thread; its `input_tokens` includes
the cached and cache-written ones, which we report separately. A resumed turn's own share is the
difference from the thread's previous cumulative value, which the backend persists per thread
(`CodexUsageStore`) and passes in here.
"""

from __future__ import annotations

from typing import Any

from aka_graph.cli_agents.base import TokenUsage
from aka_graph.cli_agents.stream_base import StreamParser, as_int, usage


class CodexCumulative:
    """The raw cumulative counters of a thread, as Codex reports them."""

    def __init__(
        self,
        input_tokens: int = 0,
        cached_input_tokens: int = 0,
        output_tokens: int = 0,
        cache_write_input_tokens: int = 0,
    ) -> None:
        self.input_tokens = input_tokens
        self.cached_input_tokens = cached_input_tokens
        self.output_tokens = output_tokens
        self.cache_write_input_tokens = cache_write_input_tokens

    @classmethod
    def from_event(cls, raw: dict[str, Any]) -> CodexCumulative:
        return cls(
            as_int(raw.get("input_tokens")),
            as_int(raw.get("cached_input_tokens")),
            as_int(raw.get("output_tokens")),
            as_int(raw.get("cache_write_input_tokens")),
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "output_tokens": self.output_tokens,
            "cache_write_input_tokens": self.cache_write_input_tokens,
        }

    def minus(self, earlier: CodexCumulative, accuracy: str) -> TokenUsage:
        inp = max(self.input_tokens - earlier.input_tokens, 0)
        cached = max(self.cached_input_tokens - earlier.cached_input_tokens, 0)
        out = max(self.output_tokens - earlier.output_tokens, 0)
        written = max(self.cache_write_input_tokens - earlier.cache_write_input_tokens, 0)
        return usage(max(inp - cached - written, 0), out, cached, written, accuracy)


class CodexStreamParser(StreamParser):
    """Codex exec events: `thread.started`, `turn.*`, `item.*`, `error`.

    `previous` is the thread's cumulative usage before this invocation: `CodexCumulative()` for a new
    thread, None when resuming a thread whose earlier total is unknown (the share is then an upper
    bound, marked partial).
    """

    def __init__(self, previous: CodexCumulative | None = CodexCumulative()) -> None:  # noqa: B008
        super().__init__()
        self.previous = previous
        self.cumulative: CodexCumulative | None = None
        self.turn_completed = False

    def handle(self, event: dict[str, Any]) -> bool:
        kind = event.get("type")
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            self.session_id = event["thread_id"]
        elif kind == "turn.completed":
            self.turn_completed = True
            raw = event.get("usage")
            if isinstance(raw, dict):
                self.cumulative = CodexCumulative.from_event(raw)
                return True
        elif kind == "turn.failed":
            self.failed = True
            err = event.get("error")
            message = err.get("message") if isinstance(err, dict) else err
            self.error = str(message or "turn.failed")
        elif kind == "error" and not self.error:
            self.error = str(event.get("message") or "error")
        elif kind in ("item.completed", "item.updated"):
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") == "agent_message":
                text = item.get("text")
                self.final_text = text if isinstance(text, str) else self.final_text
        return False

    def tokens(self) -> TokenUsage:
        if self.cumulative is None:
            return TokenUsage(accuracy="unavailable")
        if self.previous is None:
            return self.cumulative.minus(CodexCumulative(), "partial")
        return self.cumulative.minus(self.previous, "exact")
