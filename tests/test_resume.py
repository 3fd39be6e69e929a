"""Crash and resume: `kill -9` the campaign process inside each node type, run the same command again, and
the final records (memory/v*.json, ledger rows, git history) equal those of an uninterrupted run — no trial
counted twice, no budget reset.

Equal records alone cannot tell a resume from a restart (the fake agent is deterministic and the ledger's
writes are idempotent), so every crash test also watches *where* the resumed process starts and what it
re-runs: the checkpoint's `next` node and token count right after the kill, and the fake agent's
invocation log (AKA_FAKE_AGENT_LOG, outside the checkpoint). A resumed campaign may re-run only the agent
turn(s) of the node the kill interrupted; every turn finished in an earlier node is never run again."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

NODES_DIR = Path(__file__).parent / "nodes"
sys.path.insert(0, str(NODES_DIR))
from campaign_fakes import write_fake_operator  # noqa: E402

from aka_graph.commands.status import campaign_status  # noqa: E402
from aka_graph.runner import compile_graph, open_checkpointer, thread_config  # noqa: E402
from aka_graph.thread_phase import resume_point  # noqa: E402

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


Turn = tuple[str, str, str, str]  # (agent, role, episode, trial)

# the agent roles each node runs (a kill inside the node may leave its turn to be re-run on resume)
NODE_ROLES: dict[str, tuple[str, ...]] = {
    "review": ("reviewer:",),
    "implement": ("implementer",),
    "framework_baseline_v1": ("implementer", "policy_reviewer"),
    "plan_episode": ("planner",),
    "policy_review": ("policy_reviewer",),
}


def agent_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def turns(entries: list[dict[str, Any]]) -> list[Turn]:
    return [(e["agent"], e["role"], e["episode"], e["trial"]) for e in entries]


def interrupted_turns(killed: list[dict[str, Any]], node: str) -> list[dict[str, Any]]:
    """The killed process's last turns that belong to the interrupted node (its own, unfinished work):
    the trailing turns of the node's roles for the same (episode, trial) as the very last one."""
    roles = NODE_ROLES.get(node, ())
    if not roles or not killed or not killed[-1]["role"].startswith(roles):
        return []
    last = (killed[-1]["episode"], killed[-1]["trial"])
    tail: list[dict[str, Any]] = []
    for entry in reversed(killed):
        if not entry["role"].startswith(roles) or (entry["episode"], entry["trial"]) != last:
            break
        tail.insert(0, entry)
    return tail


def killed_then_resumed(
    tmp: Path, kill_at: str, *, resume_args: list[str] | None = None, env_extra: dict[str, str] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """Run until the kill, read the checkpoint's status, resume -> (killed log, resumed log, status)."""
    args = campaign_args(tmp)
    killed = run_cli(
        tmp,
        *args,
        env_extra={
            "AKA_FAKE_KILL_AT": kill_at,
            "AKA_FAKE_AGENT_LOG": str(tmp / "killed.log"),
            **(env_extra or {}),
        },
    )
    assert killed.returncode == -signal.SIGKILL, (kill_at, killed.stderr[-2000:])
    statuses = campaign_status(tmp / "ws")
    assert len(statuses) == 1, f"no checkpointed campaign after the kill at {kill_at}: {statuses}"
    resumed = run_cli(
        tmp,
        *(resume_args or args),
        env_extra={"AKA_FAKE_AGENT_LOG": str(tmp / "resumed.log"), **(env_extra or {})},
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    return agent_log(tmp / "killed.log"), agent_log(tmp / "resumed.log"), statuses[0]


def assert_resumed_where_it_stopped(
    kill_at: str,
    killed: list[dict[str, Any]],
    resumed: list[dict[str, Any]],
    status: dict[str, Any],
    uninterrupted_log: list[dict[str, Any]],
) -> None:
    """The resumed process starts at the interrupted node, re-runs no finished agent turn, and carries the
    tokens already spent (no budget reset)."""
    node = kill_at.split(":")[0]
    assert status["state"] == "interrupted" and set(status["next"]) == {node}, (kill_at, status)
    mine = interrupted_turns(killed, node)
    finished = killed[: len(killed) - len(mine)]
    assert status["tokens_spent"] == sum(e["tokens"] for e in finished), (
        f"after the kill at {kill_at} the checkpoint holds {status['tokens_spent']} tokens spent, the "
        f"finished turns charged {sum(e['tokens'] for e in finished)}"
    )
    done, expected = Counter(turns(killed)) + Counter(turns(resumed)), Counter(turns(uninterrupted_log))
    assert not expected - done, f"turns never run: {expected - done}"
    rerun = done - expected
    assert not rerun - Counter(turns(mine)), (
        f"the resumed process re-ran agent turns finished before the kill at {kill_at}: "
        f"{sorted((rerun - Counter(turns(mine))).elements())}"
    )
    assert not set(turns(finished)) & set(turns(resumed)), f"finished turns re-run after {kill_at}"


def assert_every_charged_token_counted_once(
    kill_at: str, killed: list[dict[str, Any]], resumed: list[dict[str, Any]], final_tokens: int
) -> None:
    """The campaign's final tokens_spent is what the agents charged, minus only the interrupted node's
    turns that the resumed process ran again (their first run's result was lost with the process)."""
    rerun = {t for t in turns(interrupted_turns(killed, kill_at.split(":")[0]))} & set(turns(resumed))
    lost = sum(e["tokens"] for e in killed if (e["agent"], e["role"], e["episode"], e["trial"]) in rerun)
    charged = sum(e["tokens"] for e in killed + resumed)
    assert final_tokens == charged - lost, (
        f"after the kill at {kill_at}: tokens_spent {final_tokens}, but the agents charged {charged} "
        f"of which {lost} were re-run turns: {charged - lost - final_tokens} tokens not counted"
    )


@pytest.fixture(scope="module")
def uninterrupted_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    tmp = tmp_path_factory.mktemp("uninterrupted")
    done = run_cli(tmp, *campaign_args(tmp), env_extra={"AKA_FAKE_AGENT_LOG": str(tmp / "agent.log")})
    assert done.returncode == 0, done.stderr
    log = agent_log(tmp / "agent.log")
    assert len({e["pid"] for e in log}) == 1 and sum(e["tokens"] for e in log) == records(tmp)["tokens"]
    return records(tmp), log


@pytest.fixture(scope="module")
def uninterrupted(uninterrupted_run: tuple[dict[str, Any], list[dict[str, Any]]]) -> dict[str, Any]:
    return uninterrupted_run[0]


@pytest.fixture(scope="module")
def uninterrupted_log(uninterrupted_run: tuple[dict[str, Any], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return uninterrupted_run[1]


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
    tmp_path: Path, uninterrupted: dict[str, Any], uninterrupted_log: list[dict[str, Any]], kill_at: str
) -> None:
    killed, resumed, status = killed_then_resumed(tmp_path, kill_at)
    assert_resumed_where_it_stopped(kill_at, killed, resumed, status, uninterrupted_log)
    final = records(tmp_path)
    assert_every_charged_token_counted_once(kill_at, killed, resumed, final["tokens"])
    assert final == uninterrupted


def drop_the_newest_checkpoint(workspace: Path) -> None:
    """Turn the checkpoint database into the one a `kill -9` leaves between a node's end and its step's
    checkpoint: LangGraph saved the node's writes (against the checkpoint before it) at once, and the step's
    checkpoint would have come next. Run on a campaign killed inside the following node, whose own
    checkpoint (the newest) is exactly the one that never got written."""
    db = sqlite3.connect(workspace / "checkpoints" / "campaign.sqlite")
    with db:
        (newest,) = db.execute(
            "select checkpoint_id from checkpoints where checkpoint_ns = '' "
            "order by checkpoint_id desc limit 1"
        ).fetchone()
        db.execute("delete from checkpoints where checkpoint_ns = '' and checkpoint_id = ?", [newest])
        db.execute("delete from writes where checkpoint_ns = '' and checkpoint_id = ?", [newest])
    db.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kill_at", "finished_node"),
    [("baseline_v0:evaluated:1", "preprocess"), ("evaluate:evaluated:3", "implement")],
)
def test_kill_9_between_a_nodes_end_and_its_checkpoint_resumes_without_rerunning_the_node(
    tmp_path: Path,
    uninterrupted: dict[str, Any],
    uninterrupted_log: list[dict[str, Any]],
    kill_at: str,
    finished_node: str,
) -> None:
    """The latest checkpoint's `next` is empty then (its only task has its writes): the campaign is still
    interrupted, not finished, and the resumed run applies those writes instead of running the node (or its
    agent turn) again."""
    args = campaign_args(tmp_path)
    killed = run_cli(
        tmp_path,
        *args,
        env_extra={"AKA_FAKE_KILL_AT": kill_at, "AKA_FAKE_AGENT_LOG": str(tmp_path / "killed.log")},
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    drop_the_newest_checkpoint(tmp_path / "ws")
    (status,) = campaign_status(tmp_path / "ws")
    assert status["state"] == "interrupted" and status["next"] == [], status
    with open_checkpointer(tmp_path / "ws") as saver:
        snapshot = compile_graph(saver).get_state(thread_config(status["campaign"]))
    assert resume_point(snapshot) == f"the end of {finished_node}"

    resumed = run_cli(tmp_path, *args, env_extra={"AKA_FAKE_AGENT_LOG": str(tmp_path / "resumed.log")})
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    killed_turns, resumed_turns = turns(agent_log(tmp_path / "killed.log")), turns(
        agent_log(tmp_path / "resumed.log")
    )
    assert not set(killed_turns) & set(resumed_turns), "a finished agent turn ran again"
    assert Counter(killed_turns) + Counter(resumed_turns) == Counter(turns(uninterrupted_log))
    assert records(tmp_path) == uninterrupted


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kill_at", "record"),
    [("baseline_v0:evaluated:1", "memory/v0.json"), ("framework_baseline_v1:recorded:1", "memory/v1.json")],
)
def test_kill_9_between_writing_a_version_record_and_committing_it(
    tmp_path: Path, uninterrupted: dict[str, Any], kill_at: str, record: str
) -> None:
    """The node reads a written record back instead of redoing its work; it must still commit it (the
    resumed history lacked "V0 record: ..." when benchmarks/kill_anywhere.py killed it there)."""
    args = campaign_args(tmp_path)
    killed = run_cli(tmp_path, *args, env_extra={"AKA_FAKE_KILL_AT": kill_at})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    (root,) = [p for p in (tmp_path / "ws").iterdir() if p.name.startswith("kernel_opt_")]
    git = lambda *a: subprocess.run(["git", *a], cwd=root, check=True, capture_output=True)  # noqa: E731
    assert git("log", "-1", "--format=%s").stdout.decode().startswith(("V0 record", "V1 record"))
    git("reset", "-q", "--soft", "HEAD~1")  # the record written, the commit never made
    git("reset", "-q", "HEAD", "--", record)
    resumed = run_cli(tmp_path, *args)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert records(tmp_path) == uninterrupted


@pytest.mark.slow
def test_kill_9_while_awaiting_the_environment_resumes_the_interrupted_evaluation(
    tmp_path: Path, uninterrupted: dict[str, Any], uninterrupted_log: list[dict[str, Any]]
) -> None:
    kill_at = "await_environment:waiting:1"
    killed, resumed, status = killed_then_resumed(
        tmp_path, kill_at, env_extra={"AKA_FAKE_OUTAGE_ON_EVAL": "4"}
    )
    assert_resumed_where_it_stopped(kill_at, killed, resumed, status, uninterrupted_log)
    assert records(tmp_path) == uninterrupted


@pytest.mark.slow
def test_resume_command_continues_a_killed_campaign_with_its_stored_settings(
    tmp_path: Path, uninterrupted: dict[str, Any], uninterrupted_log: list[dict[str, Any]]
) -> None:
    kill_at = "implement:agent_finished:1"
    killed, resumed, status = killed_then_resumed(
        tmp_path, kill_at, resume_args=["resume", "--workspace", str(tmp_path / "ws"), "--quiet"]
    )
    assert status["next"] == ["implement"]
    assert_resumed_where_it_stopped(kill_at, killed, resumed, status, uninterrupted_log)
    # the interrupted implement turn is the resumed process's first agent turn, run exactly once more
    assert turns(resumed)[0] == turns(killed)[-1] == ("fake", "implementer", "1", "1")
    assert records(tmp_path) == uninterrupted


BUDGET = 9000  # 7.5 turns of the fake agent: the campaign stops on the budget mid-way


@pytest.mark.slow
def test_a_crash_does_not_reset_the_token_budget(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Killed mid-campaign and resumed, a budgeted campaign charges what an uninterrupted one charges plus
    only the interrupted turn — a restart (or a resume that forgot the tokens spent) would spend the
    budget again."""
    whole = tmp_path_factory.mktemp("budget_whole")
    args = [*campaign_args(whole), "--token-budget", str(BUDGET)]
    done = run_cli(whole, *args, env_extra={"AKA_FAKE_AGENT_LOG": str(whole / "agent.log")})
    assert done.returncode == 0, done.stderr[-3000:]
    charged = sum(e["tokens"] for e in agent_log(whole / "agent.log"))
    final = records(whole)
    assert final["state"] == "finished" and BUDGET <= final["tokens"] <= BUDGET + 2 * 1200

    tmp = tmp_path_factory.mktemp("budget_crash")
    args = [*campaign_args(tmp), "--token-budget", str(BUDGET)]
    kill_at = "implement:agent_finished:2"
    killed = run_cli(
        tmp, *args, env_extra={"AKA_FAKE_KILL_AT": kill_at, "AKA_FAKE_AGENT_LOG": str(tmp / "killed.log")}
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    statuses = campaign_status(tmp / "ws")
    assert len(statuses) == 1, "no checkpointed campaign after the kill"
    before = agent_log(tmp / "killed.log")
    assert statuses[0]["tokens_spent"] == sum(e["tokens"] for e in before[:-1])  # all but the killed turn
    resumed = run_cli(tmp, *args, env_extra={"AKA_FAKE_AGENT_LOG": str(tmp / "resumed.log")})
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    after = agent_log(tmp / "resumed.log")
    assert sum(e["tokens"] for e in before + after) == charged + before[-1]["tokens"], (
        "a crash changed the tokens charged beyond the one interrupted turn"
    )
    assert records(tmp)["tokens"] == final["tokens"]
