"""Crash and resume: `kill -9` the campaign process inside each node type, run the same command again, and
the final records (memory/v*.json, ledger rows, git history) equal those of an uninterrupted run — no trial
counted twice, no budget reset."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

NODES_DIR = Path(__file__).parent / "nodes"
sys.path.insert(0, str(NODES_DIR))
from campaign_fakes import write_fake_operator  # noqa: E402

from aka_graph.commands.status import campaign_status  # noqa: E402

VOLATILE = {"created_at", "updated_at", "recorded_at", "id", "commit"}
ARGS = [
    "--platform",
    "cpu",
    "--max-iters",
    "3",
    "--fast-episodes",
    "1",
    "--fast-trials",
    "3",
    "--reviewer",
    "r1",
    "--reviewer",
    "r2",
    "--optimization-mode",
    "production",
    "--agent-cli",
    "fake",
    "--environment-poll-interval",
    "0.01",
]


def run_cli(
    tmp: Path, *args: str, env_extra: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "AKA_GRAPH_CONTEXT_FACTORY": "campaign_fakes:make_context",
        "PYTHONPATH": os.pathsep.join([str(NODES_DIR), os.environ.get("PYTHONPATH", "")]),
        **(env_extra or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "aka_graph", *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def campaign_args(tmp: Path) -> list[str]:
    op = tmp / "op"
    if not op.exists():
        write_fake_operator(op)
    return ["run", "--op-dir", str(op), "--workspace", str(tmp / "ws"), "--quiet", *ARGS]


def _scrub(value: Any, root: str) -> Any:
    if isinstance(value, dict):
        return {k: _scrub(v, root) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_scrub(v, root) for v in value]
    if isinstance(value, str):
        return value.replace(root, "<ws>")
    return value


def records(tmp: Path) -> dict[str, Any]:
    """Everything a campaign leaves behind, minus wall-clock times and commit ids."""
    ws = tmp / "ws"
    (root,) = [p for p in ws.iterdir() if p.name.startswith("kernel_opt_")]
    memory = {
        p.name: _scrub(json.loads(p.read_text()), str(tmp)) for p in sorted((root / "memory").glob("v*.json"))
    }
    db = sqlite3.connect(root / "records" / "ledger.sqlite")
    db.row_factory = sqlite3.Row
    tables = {
        t: [_scrub(dict(r), str(tmp)) for r in db.execute(f"select * from {t} order by key")]
        for t in ("evaluations", "decisions", "agent_runs")
    }
    git = lambda *a: subprocess.run(["git", *a], cwd=root, capture_output=True, text=True).stdout  # noqa: E731
    (status,) = campaign_status(ws)
    return {
        "memory": memory,
        "ledger": tables,
        "log": git("log", "--format=%s", "campaign").splitlines(),
        "files": git("ls-tree", "-r", "--name-only", "campaign").splitlines(),
        "kernel": git("show", "campaign:kernel.py"),
        "branches": git("branch", "--format=%(refname:short)"),
        "tokens": status["tokens_spent"],
        "sessions": status["agent_sessions"],
        "state": status["state"],
        "versions": status["versions"],
    }


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("uninterrupted")
    done = run_cli(tmp, *campaign_args(tmp))
    assert done.returncode == 0, done.stderr
    return records(tmp)


KILL_POINTS = [
    "preprocess:ready:1",
    "baseline_v0:evaluated:1",
    "framework_baseline_v1:recorded:1",
    "plan_episode:episode_started:2",
    "review:agent_finished:1",
    "implement:agent_finished:2",
    "evaluate:evaluated:3",
    "policy_review:policy:1",
    "abba:verdict:2",
    "promote:recorded:1",
    "finish:finished:1",
]


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", KILL_POINTS)
def test_kill_9_in_any_node_then_rerun_gives_the_uninterrupted_records(
    tmp_path: Path, uninterrupted: dict[str, Any], kill_at: str
) -> None:
    killed = run_cli(tmp_path, *campaign_args(tmp_path), env_extra={"AKA_FAKE_KILL_AT": kill_at})
    assert killed.returncode == -signal.SIGKILL, (kill_at, killed.stderr[-2000:])
    resumed = run_cli(tmp_path, *campaign_args(tmp_path))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert records(tmp_path) == uninterrupted


@pytest.mark.slow
def test_kill_9_while_awaiting_the_environment_resumes_the_interrupted_evaluation(
    tmp_path: Path, uninterrupted: dict[str, Any]
) -> None:
    killed = run_cli(
        tmp_path,
        *campaign_args(tmp_path),
        env_extra={"AKA_FAKE_KILL_AT": "await_environment:waiting:1", "AKA_FAKE_OUTAGE_ON_EVAL": "4"},
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    resumed = run_cli(tmp_path, *campaign_args(tmp_path))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert records(tmp_path) == uninterrupted


@pytest.mark.slow
def test_resume_command_continues_a_killed_campaign_with_its_stored_settings(
    tmp_path: Path, uninterrupted: dict[str, Any]
) -> None:
    killed = run_cli(
        tmp_path, *campaign_args(tmp_path), env_extra={"AKA_FAKE_KILL_AT": "implement:agent_finished:1"}
    )
    assert killed.returncode == -signal.SIGKILL
    (status,) = campaign_status(tmp_path / "ws")
    assert status["state"] == "interrupted" and status["next"] == ["implement"]
    resumed = run_cli(tmp_path, "resume", "--workspace", str(tmp_path / "ws"), "--quiet")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert records(tmp_path) == uninterrupted
