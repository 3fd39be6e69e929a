"""Runner pieces: plain progress lines off a terminal, the rich panel on one, and resume's clear errors."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from aka_graph.progress import Progress
from aka_graph.runner import CampaignConflict, checkpoint_path, list_threads, resume_campaign
from aka_graph.state import Incumbent, TrialRecord


def feed(progress: Progress) -> None:
    progress.handle("tasks", {"id": "1", "name": "implement", "input": {}, "triggers": []})
    progress.handle("updates", {"plan_episode": {"episode": 2, "episode_kind": "full", "tokens_spent": 100}})
    progress.handle("updates", {"implement": {"trial": 1, "tokens_spent": 250}})
    progress.handle(
        "updates",
        {"evaluate": {"candidate": TrialRecord(episode=2, trial=1, kernel_dir="/k", objective=42.5)}},
    )
    progress.handle(
        "updates",
        {"promote": {"incumbent": Incumbent(version=3, kernel_path="/k", sha256="s", objective=42.5)}},
    )
    progress.handle("custom", {"node": "promote", "event": "recorded", "outcome": "promoted"})


def test_plain_progress_lines_carry_node_tokens_best_and_incumbent() -> None:
    out = io.StringIO()
    progress = Progress(stream=out, live=False)
    feed(progress)
    line = out.getvalue().strip().splitlines()[-1]
    assert "[promote] recorded outcome=promoted" in line
    assert "tokens=350" in line and "best=42.5" in line and "incumbent=v3 (42.5)" in line
    assert progress.node == "implement" and progress.episode == 2 and progress.trial == 1


def test_terminal_progress_renders_a_live_panel() -> None:
    out = io.StringIO()
    progress = Progress(stream=out, live=True)
    feed(progress)
    progress.close({})
    text = out.getvalue()
    for cell in ("aka_graph campaign", "episode", "2 full", "tokens", "350", "best so far", "42.5"):
        assert cell in text, cell


def test_resume_without_checkpoints_names_the_workspace(tmp_path: Path) -> None:
    with pytest.raises(CampaignConflict, match="none"):
        resume_campaign(tmp_path)
    assert list_threads(tmp_path) == [] and not checkpoint_path(tmp_path).exists()


def test_a_campaign_runs_in_one_process_at_a_time(tmp_path: Path) -> None:
    import subprocess
    import sys

    from aka_graph.runner import live_runner

    pid_file = tmp_path / "campaign.pid"
    assert live_runner(pid_file) is None  # no pid file
    pid_file.write_text("not a pid")
    assert live_runner(pid_file) is None
    runner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "aka_graph", "run"])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        pid_file.write_text(str(runner.pid))
        assert live_runner(pid_file) == runner.pid
        pid_file.write_text(str(other.pid))  # a live pid that is not a campaign runner (pid reuse)
        assert live_runner(pid_file) is None
    finally:
        runner.kill()
        other.kill()
        runner.wait()
        other.wait()
    pid_file.write_text(str(runner.pid))  # left behind by a runner killed with kill -9
    assert live_runner(pid_file) is None
