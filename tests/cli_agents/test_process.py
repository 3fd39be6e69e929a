"""Process control: stdin closed, own process group, wall-clock timeout, TERM then KILL of the whole
group, stop on request, raw output saved. Real processes (sh, python), no mocks."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from aka_graph.cli_agents.process import TranscriptPaths, group_alive, run_streaming

PY = sys.executable


def _run(tmp_path: Path, argv: list[str], **kw: object):  # type: ignore[no-untyped-def]
    transcript = TranscriptPaths.allocate(tmp_path / "t", "test", "role/with spaces")
    return run_streaming(
        argv, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, transcript=transcript, **{"timeout_s": 30, **kw}
    )  # type: ignore[arg-type]


def test_stdin_is_closed_so_a_reader_sees_eof_at_once(tmp_path: Path) -> None:
    outcome = _run(tmp_path, ["sh", "-c", "cat; echo after-eof"], timeout_s=10)
    assert outcome.exit_code == 0 and not outcome.timed_out
    assert outcome.transcript.stdout.read_text() == "after-eof\n"
    assert outcome.wall_s < 5


def test_lines_are_streamed_to_the_handler_and_the_raw_output_is_saved(tmp_path: Path) -> None:
    seen: list[str] = []
    outcome = _run(
        tmp_path,
        ["sh", "-c", "printf 'one\\ntwo\\n'; echo oops >&2; printf 'three'"],
        on_line=lambda line: seen.append(line),
    )
    assert seen == ["one", "two", "three"]  # the last line arrives although it has no newline
    assert outcome.transcript.stdout.read_bytes() == b"one\ntwo\nthree"
    assert outcome.transcript.stderr.read_text() == "oops\n"
    meta = json.loads(outcome.transcript.meta.read_text())
    assert meta["argv"][0] == "sh" and meta["exit_code"] == 0 and meta["pgid"] == outcome.pid
    assert "role_with_spaces" in outcome.transcript.stdout.name


def test_timeout_kills_the_whole_group_even_a_child_that_ignores_sigterm(tmp_path: Path) -> None:
    script = (
        "import os, signal, subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGTERM, "
        'signal.SIG_IGN); print("child", flush=True); time.sleep(300)\'])\n'
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "time.sleep(300)\n"
    )
    start = time.monotonic()
    outcome = _run(tmp_path, [PY, "-c", script], timeout_s=1.5, term_grace_s=0.5)
    assert outcome.timed_out and outcome.exit_code != 0
    assert time.monotonic() - start < 10
    assert not group_alive(outcome.pid)


def test_a_descendant_holding_the_pipe_after_the_leader_exits_is_killed(tmp_path: Path) -> None:
    outcome = _run(tmp_path, ["sh", "-c", "sleep 120 & echo leader-done"], timeout_s=60)
    assert outcome.exit_code == 0 and not outcome.timed_out
    assert outcome.wall_s < 10
    assert outcome.leftover_killed
    assert not group_alive(outcome.pid)


def test_the_handler_can_stop_the_run_and_the_group_is_terminated(tmp_path: Path) -> None:
    seen: list[str] = []

    def handler(line: str) -> str | None:
        seen.append(line)
        return "enough" if len(seen) == 3 else None

    outcome = _run(
        tmp_path,
        ["sh", "-c", "i=0; while true; do i=$((i+1)); echo $i; sleep 0.05; done"],
        on_line=handler,
        timeout_s=60,
    )
    assert outcome.stop_reason == "enough" and not outcome.timed_out
    assert seen[:3] == ["1", "2", "3"] and len(seen) == 3  # no more calls once stopped
    assert not group_alive(outcome.pid)


def test_a_missing_executable_is_an_outcome_not_an_exception(tmp_path: Path) -> None:
    outcome = _run(tmp_path, [str(tmp_path / "no-such-cli")])
    assert outcome.exit_code == 127
    assert "could not start" in outcome.transcript.stderr.read_text()


def test_transcript_names_never_collide(tmp_path: Path) -> None:
    names = {TranscriptPaths.allocate(tmp_path, "claude", "implementer").stdout for _ in range(50)}
    assert len(names) == 50


def test_one_tree_killer_reaches_a_child_that_left_the_process_group(tmp_path: Path) -> None:
    """`process_tree.kill_tree` (used by the agent CLIs, the local sandbox and `stop`): a grandchild that
    moved to a process group of its own still dies, because it cannot leave the leader's session."""
    import os
    import signal
    import subprocess

    from aka_graph.process_tree import descendants, kill_tree, session_members, tree_alive

    ready = tmp_path / "ready"
    (tmp_path / "child.py").write_text(
        f"import os, time\nos.setpgid(0, 0)\nopen({str(ready)!r}, 'w').close()\ntime.sleep(60)\n"
    )
    script = (
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"child = subprocess.Popen([sys.executable, {str(tmp_path / 'child.py')!r}])\n"
        "time.sleep(60)\n"
    )
    leader = subprocess.Popen([PY, "-c", script], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert time.monotonic() < deadline and leader.poll() is None
            time.sleep(0.02)
        (grandchild,) = descendants(leader.pid)
        assert os.getpgid(grandchild) != leader.pid and grandchild in session_members(leader.pid)
        kill_tree(leader.pid, grace_s=0.3)  # the leader ignores SIGTERM: SIGKILL after the grace
        assert leader.wait(timeout=10) == -signal.SIGKILL
        deadline = time.monotonic() + 10
        while tree_alive(leader.pid):
            assert time.monotonic() < deadline, "a member of the session survived"
            time.sleep(0.02)
    finally:
        if leader.poll() is None:
            os.killpg(leader.pid, signal.SIGKILL)
            leader.wait()
