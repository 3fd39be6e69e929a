"""Each CLI's stream parser on streams recorded from the real CLIs (see `record_streams.py`), including
truncated and malformed lines. Expected numbers come from the fake server's log, not from a parser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aka_graph.cli_agents.base import AgentRun, TokenUsage
from aka_graph.cli_agents.claude_stream import ClaudeStreamParser
from aka_graph.cli_agents.codex_stream import CodexCumulative, CodexStreamParser
from aka_graph.cli_agents.pi_stream import PiStreamParser
from aka_graph.cli_agents.qoder import QoderBackend
from aka_graph.cli_agents.settings import SessionSettings
from aka_graph.cli_agents.stream_base import StreamParser

RECORDINGS = Path(__file__).with_name("recordings")


def recording(name: str) -> tuple[str, dict[str, Any]]:
    return (RECORDINGS / f"{name}.jsonl").read_text(), json.loads(
        (RECORDINGS / f"{name}.expected.json").read_text()
    )


def server_tokens(expected: dict[str, Any]) -> TokenUsage:
    return TokenUsage.model_validate(expected["server_tokens"])


def codex_cumulative_of(stream: str) -> CodexCumulative:
    parser = CodexStreamParser().feed_text(stream)
    assert isinstance(parser, CodexStreamParser) and parser.cumulative is not None
    return parser.cumulative


# --- Claude -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["claude_edit", "claude_resume"])
def test_claude_tokens_come_from_the_result_event_exactly(name: str) -> None:
    stream, expected = recording(name)
    parser = ClaudeStreamParser().feed_text(stream)
    assert parser.session_id == expected["session_id"]
    assert parser.tokens() == server_tokens(expected)
    assert parser.text() == expected["final_text"]
    assert not parser.failed and parser.malformed_lines == 0


def test_claude_repeats_message_usage_per_content_block_and_the_parser_does_not_add_them_up() -> None:
    stream, expected = recording("claude_edit")
    assistant = [json.loads(line) for line in stream.splitlines() if '"type":"assistant"' in line]
    ids = [e["message"]["id"] for e in assistant]
    assert len(ids) > len(set(ids)), "the recording should hold a message split over several blocks"
    naive = sum(e["message"]["usage"]["input_tokens"] for e in assistant)
    assert naive > server_tokens(expected).input
    assert ClaudeStreamParser().feed_text(stream).tokens().input == server_tokens(expected).input


def test_claude_error_stream_is_a_failure_with_the_servers_message() -> None:
    stream, expected = recording("claude_error")
    parser = ClaudeStreamParser().feed_text(stream)
    assert parser.failed and expected["failed"]
    assert "fake failure" in parser.error
    assert parser.session_id == expected["session_id"]


def test_claude_truncated_stream_gives_a_partial_total_deduplicated_per_message() -> None:
    stream, _ = recording("claude_edit")
    lines = stream.splitlines()
    result_at = next(i for i, line in enumerate(lines) if json.loads(line).get("type") == "result")
    cut = "\n".join(lines[:result_at]) + "\n" + lines[result_at][:40]  # killed mid-way through the result
    parser = ClaudeStreamParser().feed_text(cut)
    tokens = parser.tokens()
    assert tokens.accuracy == "partial"
    assert tokens.input == 1200 + 1231 + 1262  # each of the three messages once, not once per block
    assert parser.malformed_lines == 1 and not parser.failed and parser.session_id


def test_claude_parser_skips_malformed_lines_and_keeps_the_exact_result() -> None:
    stream, expected = recording("claude_edit")
    noisy = (
        "not json\n[1, 2]\n" + '{"type":"assistant","message":"oops"}\n{"type":"result","usage":7\n' + stream
    )
    parser = ClaudeStreamParser().feed_text(noisy)
    assert parser.tokens() == server_tokens(expected)
    assert parser.malformed_lines == 3  # "not json", the list and the broken result line


def test_qoder_backend_reads_claudes_stream_format() -> None:
    """qodercli needs a vendor login, so its parser is checked on Claude's recorded stream (same shape)."""
    stream, expected = recording("claude_edit")
    backend = QoderBackend(SessionSettings())
    run = AgentRun(role="implementer", prompt="p", cwd=Path("."), timeout_s=1, transcript_dir=Path("."))
    parser = backend.make_parser(run, Path("."))
    parser.feed_text(stream)
    assert parser.tokens() == server_tokens(expected)
    assert parser.session_id == expected["session_id"]


# --- Codex --------------------------------------------------------------------------------------------
def test_codex_new_thread_reports_its_cumulative_usage_split_into_uncached_and_cached() -> None:
    stream, expected = recording("codex_edit")
    parser = CodexStreamParser(CodexCumulative()).feed_text(stream)
    assert parser.session_id == expected["session_id"]
    assert parser.tokens() == server_tokens(expected)
    assert parser.final_text == expected["final_text"]


def test_codex_resumed_turn_reports_the_difference_from_the_threads_previous_total() -> None:
    first, _ = recording("codex_edit")
    stream, expected = recording("codex_resume")
    parser = CodexStreamParser(codex_cumulative_of(first)).feed_text(stream)
    assert parser.tokens() == server_tokens(expected)
    assert parser.tokens().accuracy == "exact"


def test_codex_resume_without_the_previous_total_is_an_upper_bound_marked_partial() -> None:
    stream, expected = recording("codex_resume")
    tokens = CodexStreamParser(None).feed_text(stream).tokens()
    assert tokens.accuracy == "partial"
    assert tokens.total > server_tokens(expected).total


def test_codex_turn_failed_is_a_failure() -> None:
    stream, _ = recording("codex_error")
    parser = CodexStreamParser().feed_text(stream)
    assert parser.failed and parser.error
    assert parser.tokens().accuracy == "unavailable"


def test_codex_truncated_before_turn_completed_has_no_tokens_but_keeps_the_thread() -> None:
    stream, expected = recording("codex_edit")
    cut = stream[: stream.index('{"type":"turn.completed"') + 30]
    parser = CodexStreamParser().feed_text(cut)
    assert parser.session_id == expected["session_id"]
    assert parser.tokens().accuracy == "unavailable"
    assert parser.malformed_lines == 1


# --- Pi -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["pi_edit", "pi_resume"])
def test_pi_sums_assistant_message_usage(name: str) -> None:
    stream, expected = recording(name)
    parser = PiStreamParser().feed_text(stream)
    assert parser.session_id == expected["session_id"]
    assert parser.tokens() == server_tokens(expected)
    assert parser.final_text == expected["final_text"]
    assert not parser.failed


def test_pi_failed_retries_are_a_failure_although_pi_exits_zero() -> None:
    stream, _ = recording("pi_error")
    assert '"auto_retry_end","success":false' in stream.replace(" ", "")
    parser = PiStreamParser().feed_text(stream)
    assert parser.failed
    assert "fake failure" in parser.error


def test_pi_truncated_stream_counts_finished_messages_as_partial() -> None:
    stream, _ = recording("pi_edit")
    lines = stream.splitlines()
    ends = [
        i for i, line in enumerate(lines) if '"type":"message_end"' in line and '"role":"assistant"' in line
    ]
    cut = "\n".join(lines[: ends[1] + 1]) + "\n" + lines[ends[1] + 1][:25]
    tokens = PiStreamParser().feed_text(cut).tokens()
    assert tokens.accuracy == "partial"
    assert tokens.input == 1200 + 1231 and tokens.output == 40 + 43


# --- shared -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("parser", [ClaudeStreamParser(), CodexStreamParser(), PiStreamParser()])
def test_an_empty_or_garbage_stream_reports_nothing_and_does_not_crash(parser: StreamParser) -> None:
    parser.feed_text('\n\n\x00garbage\n{"type": 5}\n{"usage": {"input_tokens": "many"}}\n')
    assert parser.session_id is None
    assert parser.tokens().accuracy == "unavailable"
    assert not parser.failed
