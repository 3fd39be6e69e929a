"""The real claude, codex and pi CLIs, driven offline by the fake model server: they edit kernel.py
with their own tools, and the backends report the session and exactly the tokens the server sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aka_graph.cli_agents.assets import DEFAULT_SKILLS_DIR, install_workspace_assets
from aka_graph.cli_agents.base import AgentResult, BudgetExceeded, TokenUsage
from aka_graph.cli_agents.process import group_alive
from tests.cli_agents.conftest import FAKE_KEY, FakeServer, agent_run, make_cli_backend, require_cli
from tests.cli_agents.fake_model_server import NEW_TEXT, OLD_TEXT

pytestmark = [pytest.mark.cli, pytest.mark.timeout(120)]
CLIS = ["claude", "codex", "pi"]


def sent_tokens(server: FakeServer, run_id: str) -> TokenUsage:
    """What the fake server charged for one invocation, in the backend's terms."""
    total = TokenUsage(accuracy="exact")
    requests = [r for r in server.requests(run_id) if r.get("usage_sent")]
    assert requests, f"the server saw no request of run {run_id}"
    for r in requests:
        u: dict[str, Any] = r["usage_sent"]
        if r["api"] == "anthropic":
            part = (
                u["input_tokens"],
                u["output_tokens"],
                u["cache_read_input_tokens"],
                u["cache_creation_input_tokens"],
            )
        else:
            cached = u["input_tokens_details"]["cached_tokens"]
            part = (u["input_tokens"] - cached, u["output_tokens"], cached, 0)
        total = total + TokenUsage(
            input=part[0],
            output=part[1],
            cache_read=part[2],
            cache_write=part[3],
            total=sum(part),
            accuracy="exact",
        )
    return total


def meta_of(result: AgentResult) -> dict[str, Any]:
    return json.loads(Path(str(result.transcript_path).replace(".stdout.jsonl", ".meta.json")).read_text())


@pytest.mark.parametrize("cli", CLIS)
def test_cli_edits_kernel_and_reports_session_and_exact_tokens(
    cli: str, fake_server: FakeServer, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_cli(cli)
    user_home = tmp_path / "user-home"
    user_home.mkdir()
    monkeypatch.setenv("HOME", str(user_home))
    backend = make_cli_backend(cli, fake_server, tmp_path / "home")
    run, run_id = agent_run(workspace, "edit")
    seen: list[TokenUsage] = []

    result = backend.run(run, on_tokens=seen.append)

    assert result.ok, result.error
    kernel = (workspace / "kernel.py").read_text()
    assert NEW_TEXT in kernel and OLD_TEXT not in kernel
    assert result.final_text == "DONE: kernel.py edited"
    assert result.session_id
    assert result.tokens == sent_tokens(fake_server, run_id)
    assert len(fake_server.requests(run_id)) == 3  # read, edit, final answer
    assert seen and seen[-1].total == result.tokens.total  # observed live, ending on the exact total
    if cli == "claude":
        assert {r["session_header"] for r in fake_server.requests(run_id)} == {result.session_id}
    transcript = result.transcript_path.read_text()
    assert result.session_id in transcript
    assert FAKE_KEY not in json.dumps(meta_of(result)["argv"])
    assert any((tmp_path / "home").iterdir()), "the CLI keeps its state in its private home"
    assert sorted(p.name for p in user_home.iterdir()) == [], "nothing leaks into the user's home"


@pytest.mark.parametrize("cli", CLIS)
def test_resume_continues_the_same_session_and_reports_only_its_own_tokens(
    cli: str, fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    require_cli(cli)
    backend = make_cli_backend(cli, fake_server, tmp_path / "home")
    first_run, first_id = agent_run(workspace, "edit")
    first = backend.run(first_run)
    assert first.ok, first.error

    restarted = make_cli_backend(cli, fake_server, tmp_path / "home")  # as after a coordinator restart
    second_run, second_id = agent_run(workspace, "answer", resume=first.session_id)
    second = restarted.run(second_run)

    assert second.ok, second.error
    assert second.session_id == first.session_id
    assert second.final_text == "ANSWER: task prompts seen = 2"  # the server saw the first turn's history
    assert second.tokens == sent_tokens(fake_server, second_id)
    assert first.tokens == sent_tokens(fake_server, first_id)


@pytest.mark.parametrize("cli", CLIS)
def test_server_error_is_a_failed_run(
    cli: str, fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    require_cli(cli)
    backend = make_cli_backend(cli, fake_server, tmp_path / "home")
    run, run_id = agent_run(workspace, "error")

    result = backend.run(run)

    assert result.failed and not result.ok and not result.timed_out
    # claude and codex exit 1; pi exits 0 after its failed retries and only its stream tells
    assert result.exit_code == {"claude": 1, "codex": 1, "pi": 0}[cli]
    if cli == "codex":  # codex words a 500 its own way; its stream says turn.failed
        assert result.error and '"turn.failed"' in result.transcript_path.read_text()
    else:
        assert "fake failure" in result.error
    assert fake_server.requests(run_id)
    assert (workspace / "kernel.py").read_text().count(OLD_TEXT) == 1


@pytest.mark.parametrize("cli", CLIS)
def test_hang_is_killed_by_the_timeout_with_no_process_left(
    cli: str, fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    require_cli(cli)
    backend = make_cli_backend(cli, fake_server, tmp_path / "home")
    run, run_id = agent_run(workspace, "hang", timeout_s=6)

    result = backend.run(run)

    assert result.timed_out and result.failed and not result.ok
    assert "timed out" in result.error
    assert fake_server.requests(run_id), "the CLI never reached the server"
    assert not group_alive(meta_of(result)["pgid"])


@pytest.mark.parametrize("cli", ["claude", "pi"])
def test_token_budget_stops_the_session_while_it_streams(
    cli: str, fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    require_cli(cli)
    backend = make_cli_backend(cli, fake_server, tmp_path / "home")
    run, run_id = agent_run(workspace, "edit")

    def budget(usage: TokenUsage) -> None:
        if usage.total > 1000:
            raise BudgetExceeded(f"{usage.total} tokens > 1000")

    result = backend.run(run, on_tokens=budget)

    assert result.stopped and result.failed and not result.ok
    assert "token budget" in result.error
    assert result.tokens.accuracy == "partial" and result.tokens.total > 1000
    assert len(fake_server.requests(run_id)) < 3  # stopped before the turn could finish
    assert not group_alive(meta_of(result)["pgid"])


@pytest.mark.parametrize("cli", CLIS)
def test_workspace_skills_reach_the_models_context(
    cli: str, fake_server: FakeServer, workspace: Path, tmp_path: Path
) -> None:
    require_cli(cli)
    backend = make_cli_backend(cli, fake_server, tmp_path / "home")
    names = sorted(p.name for p in DEFAULT_SKILLS_DIR.iterdir() if (p / "SKILL.md").is_file())

    bare_run, bare_id = agent_run(workspace, "context")
    assert backend.run(bare_run).ok
    install_workspace_assets(workspace, DEFAULT_SKILLS_DIR)
    run, run_id = agent_run(workspace, "context")
    assert backend.run(run).ok

    assert not any(name in fake_server.requests(bare_id)[0]["body"] for name in names)
    body = fake_server.requests(run_id)[0]["body"]
    assert [name for name in names if name not in body] == []
