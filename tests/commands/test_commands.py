"""The campaign commands: graph (Mermaid), status (budget, versions, incumbent, now), stop (clean end of a
running campaign whose agent runs in its own session), run --help, and the demo's defaults."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

NODES_DIR = Path(__file__).resolve().parents[1] / "nodes"
sys.path.insert(0, str(NODES_DIR))
from campaign_fakes import write_fake_operator  # noqa: E402

from aka_graph.cli import app  # noqa: E402
from aka_graph.cli_agents.registry import BACKEND_NAMES  # noqa: E402

RUNNER = CliRunner()


def cli_env(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "AKA_GRAPH_CONTEXT_FACTORY": "campaign_fakes:make_context",
        "PYTHONPATH": os.pathsep.join([str(NODES_DIR), os.environ.get("PYTHONPATH", "")]),
        **extra,
    }


def run_args(tmp: Path) -> list[str]:
    op = tmp / "op"
    if not op.exists():
        write_fake_operator(op)
    return [
        "run",
        "--op-dir",
        str(op),
        "--workspace",
        str(tmp / "ws"),
        "--platform",
        "cpu",
        "--agent-cli",
        "fake",
        "--max-iters",
        "1",
        "--fast-episodes",
        "1",
        "--fast-trials",
        "2",
    ]


def test_graph_prints_mermaid_with_every_node_and_the_review_fan_out() -> None:
    result = RUNNER.invoke(app, ["graph"])
    assert result.exit_code == 0
    for node in (
        "preprocess",
        "baseline_v0",
        "framework_baseline_v1",
        "plan_episode",
        "review",
        "implement",
        "evaluate",
        "policy_review",
        "abba",
        "promote",
        "finish",
        "await_environment",
    ):
        assert f"\t{node}(" in result.stdout
    assert "plan_episode -.-> review;" in result.stdout and "evaluate -.-> implement;" in result.stdout


def test_run_help_explains_the_campaign_flags() -> None:
    result = RUNNER.invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for flag in (
        "--op-dir",
        "--platform",
        "--framework",
        "--agent-cli",
        "--optimization-mode",
        "--max-iters",
        "--token-budget",
        "--max-stall",
        "--target-util",
        "--fast-episodes",
        "--fast-trials",
        "--convert-after",
        "--verify-repeats",
        "--min-improvement-pct",
        "--regression-guard-pct",
        "--v1",
        "--handoff-resumes",
        "--sandbox-ssh",
        "--sandbox-ssh-gpu",
        "--workspace",
        "--environment-poll-interval",
    ):
        assert flag in result.stdout, flag


def test_bad_flag_values_are_errors_naming_the_flag(tmp_path: Path) -> None:
    result = RUNNER.invoke(app, [*run_args(tmp_path), "--verify-repeats", "0"])
    assert result.exit_code == 2 and "--verify-repeats" in result.output


def test_status_shows_budget_versions_and_incumbent_of_a_finished_campaign(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aka_graph", *run_args(tmp_path), "--quiet", "--token-budget", "100000"],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = RUNNER.invoke(app, ["status", "--workspace", str(tmp_path / "ws")])
    assert result.exit_code == 0, result.output
    assert "finished" in result.stdout and "tokens 2400/100000 over 2 agent sessions" in result.stdout
    assert "v0: baseline" in result.stdout and "v1: promoted" in result.stdout
    rows = json.loads(RUNNER.invoke(app, ["status", "--workspace", str(tmp_path / "ws"), "--json"]).stdout)
    assert rows[0]["incumbent"]["version"] == 1 and rows[0]["state"] == "finished"
    campaign_dir = tmp_path / "ws" / rows[0]["campaign"]
    git_status = subprocess.run(
        ["git", "-C", str(campaign_dir), "status", "--porcelain"], capture_output=True, text=True, check=True
    ).stdout
    tracked = subprocess.run(["git", "-C", str(campaign_dir), "ls-files", "submission.json"],
                             capture_output=True, text=True, check=True).stdout
    assert tracked.strip() == "submission.json" and "submission.json" not in git_status
    (campaign_dir / "report" / "report.md").unlink()
    report = RUNNER.invoke(app, ["report", str(campaign_dir)])
    assert report.exit_code == 0 and (campaign_dir / "report" / "report.md").is_file()
    assert RUNNER.invoke(app, ["report", str(tmp_path)]).exit_code == 2


def test_status_of_an_empty_workspace_says_so(tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["status", "--workspace", str(tmp_path)])
    assert result.exit_code == 1 and "no campaign checkpoints" in result.stdout


def _children_sleeping(pid: int) -> list[int]:
    from aka_graph.process_tree import descendants

    def cmdline(p: int) -> bytes:
        try:
            return Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:  # exited since it was listed
            return b""

    return [p for p in descendants(pid) if cmdline(p).startswith(b"sleep")]


@pytest.mark.slow
def test_stop_ends_a_running_campaign_and_its_agent_then_run_resumes_it(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "aka_graph", *run_args(tmp_path), "--quiet"],
        env=cli_env(AKA_FAKE_AGENT_SLEEP="60"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not _children_sleeping(proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline, (
                proc.stderr.read() if proc.stderr else ""
            )
            time.sleep(0.2)
        sleeper = _children_sleeping(proc.pid)[0]
        started = time.monotonic()
        stopped = subprocess.run(
            [sys.executable, "-m", "aka_graph", "stop", "--workspace", str(tmp_path / "ws")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert stopped.returncode == 0, stopped.stderr
        assert proc.wait(timeout=30) == 3  # the runner's "stopped" exit code
        assert time.monotonic() - started < 20
        assert not Path(f"/proc/{sleeper}").exists() or b"Z" in Path(f"/proc/{sleeper}/stat").read_bytes()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    status = json.loads(RUNNER.invoke(app, ["status", "--workspace", str(tmp_path / "ws"), "--json"]).stdout)[
        0
    ]
    assert status["state"] == "interrupted" and status["live"]["node"] == "stopped"
    again = subprocess.run(
        [sys.executable, "-m", "aka_graph", *run_args(tmp_path)],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert "campaign finished: max-iters" in again.stdout
    # the resumed run's progress lines start from the checkpoint (V0 is the incumbent), not from zero
    lines = again.stderr.split("resuming campaign", 1)[1].splitlines()[1:]
    assert lines and "incumbent=v0 (" in lines[0] and "incumbent=-" not in again.stderr, again.stderr[-2000:]


def test_stop_without_a_running_campaign_fails_clearly(tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["stop", "--workspace", str(tmp_path)])
    assert result.exit_code == 1 and "no running campaign" in result.output


@pytest.mark.slow
def test_without_framework_every_framework_of_the_target_runs_as_its_own_campaign(tmp_path: Path) -> None:
    args = [a if a != "cpu" else "H200" for a in run_args(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-m", "aka_graph", *args],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(RUNNER.invoke(app, ["status", "--workspace", str(tmp_path / "ws"), "--json"]).stdout)
    assert sorted(r["campaign"] for r in rows) == [
        f"kernel_opt_fake_op_{fw}_H200" for fw in ("cuda", "cute_dsl", "gluon", "triton")
    ]
    assert all(r["state"] == "finished" and r["incumbent"]["version"] == 1 for r in rows)
    assert "[gluon] " in done.stderr and "[cuda] " in done.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("--op-dir", "/nonexistent/op"), "--op-dir /nonexistent/op is not a directory"),
        (("--platform", "Z9000"), "unknown --platform 'Z9000'; known: A100"),
        (("--framework", "cuda"), "--framework cuda is not supported on cpu"),
    ],
)
def test_bad_input_is_one_line_naming_the_problem_not_a_traceback(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    args = run_args(tmp_path)
    if change[0] in args:
        args[args.index(change[0]) + 1] = change[1]
    else:
        args += list(change)
    done = subprocess.run(
        [sys.executable, "-m", "aka_graph", *args, "--quiet"],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert message in done.stderr and "Traceback" not in done.stderr


def test_unknown_agent_cli_is_one_line_with_the_choices(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aka_graph", *run_args(tmp_path), "--agent-cli", "foo"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip() == "error: unknown agent CLI 'foo'; choose one of: " + ", ".join(BACKEND_NAMES)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--v1", "sometimes"], "error: Invalid value for '--v1'"),
        (["run", "--max-iters", "many"], "error: Invalid value for '--max-iters'"),
        (["run", "--no-such-flag"], "error: No such option: --no-such-flag"),
        (["frobnicate"], "error: No such command 'frobnicate'"),
    ],
)
def test_malformed_command_lines_are_one_line_exit_2(args: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aka_graph", *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and done.stderr.startswith(message), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""


def test_every_campaign_setting_is_a_run_option_with_the_model_default() -> None:
    """`run`'s options come from CampaignConfig: every field can be set and its help shows the model's
    own default, so the two cannot disagree."""
    from aka_graph.commands.config_options import flag
    from aka_graph.state import CampaignConfig

    text = RUNNER.invoke(app, ["run", "--help"], env={"COLUMNS": "400"}).stdout
    for name in CampaignConfig.model_fields:
        assert flag(name) in text, name
    assert "(default: 10)" in text.split("--max-iters", 1)[1].split("\n", 1)[0]
    assert "Exit status" in text and "3 stopped" in text


def test_resume_in_an_empty_directory_says_what_to_do(tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["resume", "--workspace", str(tmp_path)])
    assert result.exit_code == 2
    assert "nothing to resume" in result.output and "python -m aka_graph run" in result.output
    assert not (tmp_path / "checkpoints").exists()


def test_a_campaign_moved_to_another_gpu_host_is_the_same_campaign(tmp_path: Path) -> None:
    """Infrastructure settings (sandbox host and GPU) are not the campaign's
    identity: changing them continues the campaign; changing what it is stays a conflict, named."""
    first = subprocess.run(
        [sys.executable, "-m", "aka_graph", *run_args(tmp_path), "--quiet"],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.returncode == 0, first.stderr[-2000:]
    moved = subprocess.run(
        [sys.executable, "-m", "aka_graph", *run_args(tmp_path), "--gpu-index", "1",
         "--sandbox-ssh-init", "true"],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert moved.returncode == 0, moved.stderr[-2000:]
    assert "already finished" in moved.stderr
    other = subprocess.run(
        [sys.executable, "-m", "aka_graph", *run_args(tmp_path), "--seeds", "2", "--quiet"],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert other.returncode == 2 and "seeds: 3 (stored) vs 2 (now)" in other.stderr, other.stderr
    assert "gpu_index" not in other.stderr


def test_the_isolation_warning_comes_once_per_process_and_says_how_to_get_isolation(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command builds a sandbox more than once (framework discovery, then the campaign): the warning that
    jobs run without isolation (bubblewrap broken, user namespaces unavailable) is printed once, with what
    to install. The namespaces probe is made to say no: this host has them."""
    from aka_graph.tools.evaluator.harness import isolate
    from aka_graph.tools.evaluator.sandbox.local import LocalSandbox

    monkeypatch.setattr(isolate, "unavailable", lambda: f"refused for {tmp_path.name}")

    broken = tmp_path / "bwrap"
    broken.write_text(f"#!/bin/sh\necho 'no namespaces for {tmp_path.name}' >&2\nexit 1\n")
    broken.chmod(0o755)
    with caplog.at_level("WARNING"):
        for _ in range(3):
            assert LocalSandbox(bwrap=str(broken)).isolation == "none"
    warnings = [r.getMessage() for r in caplog.records if "WITHOUT isolation" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert "apt-get install bubblewrap" in warnings[0] and "unprivileged user namespaces" in warnings[0]
