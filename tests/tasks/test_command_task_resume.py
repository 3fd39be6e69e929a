"""Crash and resume of a command-task campaign: `kill -9` the campaign process in the middle of an
episode (a real subprocess: the replay agent, the local sandbox, the tree's own build, the Triton
interpreter), run the same command again, and the records equal an uninterrupted run's.

The helpers are the operator crash tests' (tests/test_resume.py: `run_cli`, `records`; the `KillSwitch`
of tests/nodes/campaign_fakes.py, wired into the real context by kill_switch_context.py). Unlike the fake
evaluator's, these evaluations measure real times and draw fresh correctness seeds, so measured numbers
(and seeds) are left out of the comparison; everything else must be equal — statuses, kernel digests,
decisions, versions, git history and files, tokens and agent sessions (a trial run twice would count
its tokens twice).
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from aka_graph.commands.status import campaign_status
from tests.tasks.conftest import FIXTURE
from tests.test_resume import NODES_DIR, records, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]  # three campaigns on a loaded 2-core host

REPO = Path(__file__).resolve().parents[2]
KILL_AT = "evaluate:evaluated:1"  # episode 1: trial 1 evaluated, trial 2 not yet written
MEASURED = re.compile(r"\d+\.\d+(?:e[+-]?\d+)?|\d+(?:\.\d+)?\s?%")
RANDOM_KEYS = {"seeds", "seed"}


def campaign(tmp: Path, kill_at: str | None = None) -> Any:
    env = {
        "AKA_GRAPH_CONTEXT_FACTORY": "tests.tasks.kill_switch_context:make_context",
        "PYTHONPATH": os.pathsep.join([str(REPO), str(NODES_DIR), os.environ.get("PYTHONPATH", "")]),
        **({"AKA_FAKE_KILL_AT": kill_at} if kill_at else {}),
    }
    argv = [
        "run", "--op-dir", str(FIXTURE / "aka_task.toml"), "--workspace", str(tmp / "ws"), "--quiet",
        "--platform", "cpu", "--framework", "triton", "--agent-cli", "replay",
        "--replay-script", str(FIXTURE / "replay_campaign.json"),
        "--max-iters", "1", "--fast-trials", "2", "--verify-repeats", "3", "--seeds", "1",
    ]  # fmt: skip
    return run_cli(tmp, *argv, env_extra=env, timeout=1100)


def unmeasured(value: Any) -> Any:
    """`value` without what differs between two honest runs: measured numbers and random seeds."""
    if isinstance(value, dict):
        return {k: "<random>" if k in RANDOM_KEYS else unmeasured(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unmeasured(v) for v in value]
    if isinstance(value, float):
        return "<measured>"
    if isinstance(value, str):
        value = re.sub(r'"seeds?": \[?[\d, ]*\]?', '"seeds": <random>', value)
        return MEASURED.sub("<measured>", re.sub(r"\bseeds? \d+", "seed <random>", value))
    return value


def test_kill_9_mid_episode_then_rerun_gives_the_uninterrupted_records(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    straight = tmp_path_factory.mktemp("uninterrupted")
    done = campaign(straight)
    assert done.returncode == 0, done.stderr[-3000:]
    expected = records(straight)
    assert sorted(expected["memory"]) == ["v0.json", "v1.json"]  # V0, then a promotion

    crashed = tmp_path_factory.mktemp("crashed")
    killed = campaign(crashed, KILL_AT)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    (status,) = campaign_status(crashed / "ws")
    assert status["state"] == "interrupted" and set(status["next"]) == {"evaluate"}, status
    assert status["tokens_spent"] == 120  # trial 1's turn, charged once before the kill
    resumed = campaign(crashed)
    assert resumed.returncode == 0, resumed.stderr[-3000:]

    got = records(crashed)
    assert got["tokens"] == expected["tokens"] == 240 and got["sessions"] == expected["sessions"]
    assert unmeasured(got) == unmeasured(expected)
