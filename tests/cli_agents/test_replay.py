"""The replay backend replays a recorded script deterministically: edits, tokens, sessions, failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aka_graph.cli_agents.base import AgentBackend, AgentNotReady, AgentRun, TokenUsage
from aka_graph.cli_agents.replay import ReplayBackend

EXAMPLE = Path(__file__).resolve().parents[2] / "aka_graph" / "examples" / "vq_nearest_code"


def _script(tmp_path: Path, turns: list[dict]) -> Path:
    (tmp_path / "kernels").mkdir(exist_ok=True)
    (tmp_path / "kernels" / "a.py").write_text("A = 1\n")
    path = tmp_path / "replay.json"
    path.write_text(json.dumps({"schema": "aka_graph.replay.v1", "turns": turns}))
    return path


def _run(cwd: Path, role: str = "implementer", resume: str | None = None, **labels: str) -> AgentRun:
    cwd.mkdir(parents=True, exist_ok=True)
    return AgentRun(role=role, prompt="do it", cwd=cwd, timeout_s=10, transcript_dir=cwd.parent / "tx",
                    labels=labels, resume_session=resume)


TURNS = [
    {"role": "implementer", "labels": {"episode": "1"}, "final_text": "generic e{episode}",
     "tokens": {"input": 1, "output": 1}},
    {"role": "implementer", "labels": {"episode": "1", "trial": "2"},
     "edits": [{"path": "kernel.py", "source": "kernels/a.py"},
               {"path": "plans/e{episode}.md", "content": "plan {trial}\n"},
               {"path": "old.txt", "delete": True}],
     "final_text": "trial {trial} done", "tokens": {"input": 100, "output": 20, "cache_read": 5}},
    {"role": "reviewer:*", "final_text": "looks fine"},
    {"role": "implementer", "labels": {"episode": "1", "trial": "2"}, "resume": True,
     "final_text": "resumed", "tokens": {"input": 7, "output": 3}},
]


def test_is_an_agent_backend_and_ready(tmp_path: Path) -> None:
    backend = ReplayBackend(_script(tmp_path, TURNS))
    assert isinstance(backend, AgentBackend) and backend.name == "replay"
    backend.check_ready()
    with pytest.raises(AgentNotReady, match="not found"):
        ReplayBackend(tmp_path / "missing.json").check_ready()


def test_most_specific_turn_applies_its_edits_and_reports_exact_tokens(tmp_path: Path) -> None:
    backend = ReplayBackend(_script(tmp_path, TURNS))
    cwd = tmp_path / "wt"
    cwd.mkdir()
    (cwd / "old.txt").write_text("stale")
    seen: list[TokenUsage] = []
    result = backend.run(_run(cwd, episode="1", trial="2", kind="fast"), on_tokens=seen.append)
    assert result.ok and result.final_text == "trial 2 done"
    assert (cwd / "kernel.py").read_text() == "A = 1\n"
    assert (cwd / "plans" / "e1.md").read_text() == "plan 2\n"
    assert not (cwd / "old.txt").exists()
    assert result.tokens == TokenUsage(input=100, output=20, cache_read=5, total=125, accuracy="exact")
    assert seen == [result.tokens]
    events = [json.loads(line) for line in result.transcript_path.read_text().splitlines()]
    assert events[0]["prompt"] == "do it" and events[-1]["final_text"] == "trial 2 done"


def test_same_run_replays_the_same_turn_and_session(tmp_path: Path) -> None:
    backend = ReplayBackend(_script(tmp_path, TURNS))
    first = backend.run(_run(tmp_path / "a", episode="1", trial="3"))
    again = ReplayBackend(backend.script).run(_run(tmp_path / "a", episode="1", trial="3"))
    other = backend.run(_run(tmp_path / "a", episode="1", trial="4"))
    assert first.final_text == again.final_text == "generic e1"
    assert first.session_id == again.session_id != other.session_id
    assert first.transcript_path.read_text() == again.transcript_path.read_text()


def test_resume_keeps_the_session_and_prefers_a_resume_turn(tmp_path: Path) -> None:
    backend = ReplayBackend(_script(tmp_path, TURNS))
    result = backend.run(_run(tmp_path / "b", resume="sess-42", episode="1", trial="2"))
    assert (result.session_id, result.final_text, result.tokens.total) == ("sess-42", "resumed", 10)
    reviewed = backend.run(_run(tmp_path / "b", role="reviewer:codex", resume="r1", episode="1"))
    assert (reviewed.session_id, reviewed.final_text) == ("r1", "looks fine")  # no resume turn: same turn


def test_unknown_key_is_a_failed_result_naming_it(tmp_path: Path) -> None:
    backend = ReplayBackend(_script(tmp_path, TURNS))
    result = backend.run(_run(tmp_path / "c", role="planner", episode="9"))
    assert result.failed and not result.ok and result.exit_code == 1
    assert '"role": "planner"' in result.error and '"episode": "9"' in result.error
    assert result.transcript_path.is_file() and result.tokens.total == 0


def test_edits_cannot_escape_the_working_directory(tmp_path: Path) -> None:
    script = _script(tmp_path, [{"role": "implementer", "edits": [{"path": "../x.py", "content": "x"}]}])
    result = ReplayBackend(script).run(_run(tmp_path / "d"))
    assert result.failed and "leaves the working directory" in result.error
    assert not (tmp_path / "x.py").exists()


def test_missing_source_file_is_a_failed_result(tmp_path: Path) -> None:
    script = _script(tmp_path, [{"role": "implementer", "edits": [{"path": "k.py", "source": "nope.py"}]}])
    result = ReplayBackend(script).run(_run(tmp_path / "e"))
    assert result.failed and "nope.py" in result.error


def test_demo_script_covers_the_graphs_roles(tmp_path: Path) -> None:
    backend = ReplayBackend(EXAMPLE / "replay.json")
    backend.check_ready()
    for role, labels in [("implementer", {"episode": "1", "trial": "1"}),
                         ("implementer", {"episode": "1", "trial": "2"}),
                         ("planner", {"episode": "2"}), ("implementer", {"episode": "2", "trial": "1"}),
                         ("implementer", {"episode": "v1", "trial": "1"}),
                         ("reviewer:claude", {"episode": "2"}),
                         ("policy_reviewer", {"episode": "1", "trial": "2"})]:
        result = backend.run(_run(tmp_path / "wt", role=role, **labels))
        assert result.ok, (role, labels, result.error)
        assert result.tokens.total > 0
    assert (tmp_path / "wt" / "plans" / "episode_2.md").read_text().startswith("# Episode 2 plan")


def test_a_budget_stop_is_a_stopped_turn_without_its_edits_not_an_exception(tmp_path: Path) -> None:
    """The contract every backend keeps: an observer raising `BudgetExceeded` ends the turn, the result
    says `stopped`, and the node records an unevaluated trial instead of failing."""
    from aka_graph.cli_agents.base import BudgetExceeded

    backend = ReplayBackend(_script(tmp_path, TURNS))
    cwd = tmp_path / "wt"

    def over_budget(usage: TokenUsage) -> None:
        raise BudgetExceeded(f"{usage.total} tokens in this turn exceed the 10 left")

    result = backend.run(_run(cwd, episode="1", trial="2"), on_tokens=over_budget)
    assert result.stopped and result.failed and not result.ok
    assert result.error == "stopped by the token budget: 125 tokens in this turn exceed the 10 left"
    assert result.tokens.total == 125 and result.tokens.accuracy == "partial"
    assert not (cwd / "kernel.py").exists()  # stopped before its edits
    assert result.transcript_path.is_file()
    ok = backend.run(_run(cwd, episode="1", trial="2"), on_tokens=lambda usage: None)
    assert ok.ok and not ok.stopped and (cwd / "kernel.py").is_file()
