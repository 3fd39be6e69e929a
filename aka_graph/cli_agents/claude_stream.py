"""Parser of Claude Code's (and Qoder's, same shape) `--output-format stream-json` stdout.

Tokens: the final `result` event's `usage` is this invocation's exact total. Every `assistant` event
repeats its message's usage once per content block, so while streaming we keep the latest usage per
message id (never a sum over events) as a partial running total.
"""

from __future__ import annotations

from typing import Any

from aka_graph.cli_agents.base import TokenUsage
from aka_graph.cli_agents.stream_base import StreamParser, as_int, usage


def claude_usage(raw: dict[str, Any], accuracy: str) -> TokenUsage:
    return usage(
        as_int(raw.get("input_tokens")),
        as_int(raw.get("output_tokens")),
        as_int(raw.get("cache_read_input_tokens")),
        as_int(raw.get("cache_creation_input_tokens")),
        accuracy,
    )


class ClaudeStreamParser(StreamParser):
    """Claude Code stream-json events: `system/init`, `assistant`, `user`, `result`."""

    def __init__(self) -> None:
        super().__init__()
        self._per_message: dict[str, TokenUsage] = {}
        self._result_usage: TokenUsage | None = None
        self._last_assistant_text = ""
        self.saw_result = False

    def handle(self, event: dict[str, Any]) -> bool:
        kind = event.get("type")
        if isinstance(event.get("session_id"), str) and event["session_id"]:
            self.session_id = self.session_id or event["session_id"]
        if kind == "assistant":
            message = event.get("message")
            if not isinstance(message, dict):
                return False
            texts = [
                b.get("text", "")
                for b in message.get("content") or []
                if isinstance(b, dict) and b.get("type") == "text"
            ]
            if any(texts):
                self._last_assistant_text = "".join(texts)
            raw = message.get("usage")
            if isinstance(raw, dict) and self._result_usage is None:
                key = str(message.get("id") or f"anon-{len(self._per_message)}")
                new = claude_usage(raw, "partial")
                changed = self._per_message.get(key) != new
                self._per_message[key] = new
                return changed
            return False
        if kind == "result":
            self.saw_result = True
            text = event.get("result")
            self.final_text = text if isinstance(text, str) else self._last_assistant_text
            subtype = str(event.get("subtype") or "")
            if event.get("is_error") is True or subtype.startswith("error"):
                self.failed = True
                errors = event.get("errors")
                self.error = self.final_text or (str(errors) if errors else subtype) or "is_error"
            raw = event.get("usage")
            if isinstance(raw, dict):
                self._result_usage = claude_usage(raw, "exact")
                return True
        return False

    def tokens(self) -> TokenUsage:
        if self._result_usage is not None:
            return self._result_usage
        if not self._per_message:
            return TokenUsage(accuracy="unavailable")
        total = TokenUsage(accuracy="partial")
        for part in self._per_message.values():
            total = total + part
        return total.model_copy(update={"accuracy": "partial"})

    def text(self) -> str:
        return self.final_text or self._last_assistant_text
