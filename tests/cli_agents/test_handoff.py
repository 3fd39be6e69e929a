"""Handoff recovery: resume the same session while the turn's contract is unmet, restate the context
for CLIs without resume, return every invocation. A scripted double plus one run with the real pi."""

from __future__ import annotations

from pathlib import Path

import pytest

from aka_graph.cli_agents.base import AgentResult, AgentRun, TokenObserver, TokenUsage
from aka_graph.cli_agents.handoff import run_with_handoff
from tests.cli_agents.conftest import FakeServer, agent_run, make_cli_backend, require_cli


class ScriptedBackend:
    """A test double honouring the `AgentBackend` contract: turn N writes `outputs[N]` to a file."""

    name = "scripted"

    def __init__(
        self, outputs: list[str], *, supports_resume: bool = True, timed_out_at: int | None = None
    ) -> None:
        self.outputs = outputs
        self.supports_resume = supports_resume
        self.timed_out_at = timed_out_at
        self.runs: list[AgentRun] = []

    def check_ready(self) -> None:
        return None

    def run(self, run: AgentRun, on_tokens: TokenObserver | None = None) -> AgentResult:
        n = len(self.runs)
        self.runs.append(run)
        (run.cwd / "out.txt").write_text(self.outputs[n])
        tokens = TokenUsage(input=100, output=10, total=110, accuracy="exact")
        if on_tokens:
            on_tokens(tokens)
        session = run.resume_session or (f"s{n}" if self.supports_resume else None)
        return AgentResult(
            exit_code=0,
            session_id=session,
            tokens=tokens,
            transcript_path=run.cwd / "t",
            final_text=f"turn {n}",
            timed_out=n == self.timed_out_at,
        )


def needs_done(result: AgentResult, cwd: Path) -> str | None:
    return None if (cwd / "out.txt").read_text() == "done" else "out.txt must say done"


def _run(tmp_path: Path) -> AgentRun:
    return AgentRun(
        role="implementer",
        prompt="write done to out.txt",
        cwd=tmp_path,
        timeout_s=10,
        transcript_dir=tmp_path,
        labels={"episode": "3"},
    )


def test_a_satisfied_turn_is_not_resumed(tmp_path: Path) -> None:
    backend = ScriptedBackend(["done"])
    results = run_with_handoff(backend, _run(tmp_path), lambda r: needs_done(r, tmp_path))
    assert len(results) == 1 and len(backend.runs) == 1


def test_the_same_session_is_resumed_with_what_is_missing_until_satisfied(tmp_path: Path) -> None:
    backend = ScriptedBackend(["draft", "draft2", "done"])
    results = run_with_handoff(backend, _run(tmp_path), lambda r: needs_done(r, tmp_path), max_resumes=2)
    assert [r.final_text for r in results] == ["turn 0", "turn 1", "turn 2"]
    assert [r.resume_session for r in backend.runs] == [None, "s0", "s0"]
    assert all("out.txt must say done" in r.prompt for r in backend.runs[1:])
    assert [r.labels for r in backend.runs] == [
        {"episode": "3"},
        {"episode": "3", "handoff": "1"},
        {"episode": "3", "handoff": "2"},
    ]


def test_resumes_stop_after_max_resumes_and_every_invocation_is_returned(tmp_path: Path) -> None:
    backend = ScriptedBackend(["no"] * 10)
    results = run_with_handoff(backend, _run(tmp_path), lambda r: needs_done(r, tmp_path), max_resumes=2)
    assert len(results) == 3
    assert sum((r.tokens for r in results), TokenUsage(accuracy="exact")).total == 330


def test_a_cli_without_resume_gets_a_fresh_session_with_the_context_restated(tmp_path: Path) -> None:
    backend = ScriptedBackend(["draft", "done"], supports_resume=False)
    results = run_with_handoff(backend, _run(tmp_path), lambda r: needs_done(r, tmp_path))
    assert len(results) == 2
    second = backend.runs[1]
    assert second.resume_session is None
    assert second.prompt.startswith("write done to out.txt")
    assert "out.txt must say done" in second.prompt and "turn 0" in second.prompt


def test_a_timed_out_turn_is_not_resumed(tmp_path: Path) -> None:
    backend = ScriptedBackend(["draft", "done"], timed_out_at=0)
    assert len(run_with_handoff(backend, _run(tmp_path), lambda r: needs_done(r, tmp_path))) == 1


def test_the_token_observer_sees_the_total_over_all_invocations(tmp_path: Path) -> None:
    backend = ScriptedBackend(["a", "b", "done"])
    seen: list[int] = []
    run_with_handoff(
        backend, _run(tmp_path), lambda r: needs_done(r, tmp_path), on_tokens=lambda u: seen.append(u.total)
    )
    assert seen == [110, 220, 330]


def test_a_total_timeout_gives_later_invocations_only_what_is_left(tmp_path: Path) -> None:
    backend = ScriptedBackend(["a", "done"])
    run_with_handoff(backend, _run(tmp_path), lambda r: needs_done(r, tmp_path), total_timeout_s=5)
    assert backend.runs[0].timeout_s == 10 and backend.runs[1].timeout_s <= 5


def test_negative_max_resumes_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_resumes"):
        run_with_handoff(ScriptedBackend(["done"]), _run(tmp_path), lambda r: None, max_resumes=-1)


@pytest.mark.cli
@pytest.mark.timeout(120)
def test_real_pi_is_resumed_in_the_same_session_when_the_contract_is_unmet(
    fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    require_cli("pi")
    backend = make_cli_backend("pi", fake_server, tmp_path / "home")
    run, run_id = agent_run(workspace, "answer")  # answers without editing kernel.py

    results = run_with_handoff(backend, run, lambda r: "kernel.py is unchanged", max_resumes=1)

    assert len(results) == 2 and all(r.ok for r in results)
    assert results[0].session_id == results[1].session_id
    requests = fake_server.requests(run_id)
    assert len(requests) == 2
    assert all(r.tokens.accuracy == "exact" and r.tokens.total > 0 for r in results)
    assert results[1].tokens.total == sum(sum(v for v in req["usage_sent"].values()) for req in requests[1:])
