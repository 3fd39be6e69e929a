"""Parser of `pi --mode json` stdout.

Pi has no invocation total: usage comes per assistant `message_end` (`input` excludes cached tokens),
so the running total is their sum. After failed retries Pi can still exit 0; `auto_retry_end` with
`success: false` (or a final assistant message that stopped on an error) marks the run failed.
"""

from __future__ import annotations

from typing import Any

from aka_graph.cli_agents.base import TokenUsage
from aka_graph.cli_agents.stream_base import StreamParser, as_int, usage


class PiStreamParser(StreamParser):
    """Pi JSON-mode events: `session`, agent/turn/message/tool events, `auto_retry_*`."""

    def __init__(self) -> None:
        super().__init__()
        self._sum = TokenUsage(accuracy="unavailable")
        self._seen_usage = False
        self.settled = False
        self._last_stop_reason = ""

    def handle(self, event: dict[str, Any]) -> bool:
        kind = event.get("type")
        if kind == "session" and isinstance(event.get("id"), str):
            self.session_id = event["id"]
        elif kind == "message_end":
            message = event.get("message")
            if not isinstance(message, dict) or message.get("role") != "assistant":
                return False
            self._last_stop_reason = str(message.get("stopReason") or "")
            if self._last_stop_reason in ("error", "aborted"):
                self.error = str(message.get("errorMessage") or self._last_stop_reason)
            else:
                text = "".join(
                    b.get("text", "")
                    for b in message.get("content") or []
                    if isinstance(b, dict) and b.get("type") == "text"
                )
                if text:
                    self.final_text = text
            raw = message.get("usage")
            if isinstance(raw, dict):
                self._seen_usage = True
                self._sum = self._sum + usage(
                    as_int(raw.get("input")),
                    as_int(raw.get("output")),
                    as_int(raw.get("cacheRead")),
                    as_int(raw.get("cacheWrite")),
                    "exact",
                )
                return True
        elif kind == "auto_retry_end" and event.get("success") is False:
            self.failed = True
            self.error = str(event.get("finalError") or self.error or "retries exhausted")
        elif kind in ("agent_settled", "agent_end") and event.get("willRetry") is not True:
            self.settled = True
            if event.get("aborted") is True:
                self.failed = True
                self.error = self.error or "aborted"
            if self._last_stop_reason in ("error", "aborted"):
                self.failed = True
        return False

    def tokens(self) -> TokenUsage:
        if not self._seen_usage:
            return TokenUsage(accuracy="unavailable")
        accuracy = "exact" if self.settled else "partial"
        return self._sum.model_copy(update={"accuracy": accuracy})
