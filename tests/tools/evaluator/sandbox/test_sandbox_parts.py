"""The sandbox's pure parts: bind rules, GPU selection, the cleanup queue, the remote status line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.sandbox.binds import (
    RuntimeBind,
    RuntimeBindError,
    bind_problem,
    parse_runtime_bind,
)
from aka_graph.tools.evaluator.sandbox.cleanup_queue import CleanupQueue
from aka_graph.tools.evaluator.sandbox.gpu import device_minor_from_proc, parse_gpu_selector, select_gpu
from aka_graph.tools.evaluator.sandbox.remote_script import STATUS_MARK, JobScript, split_status


@pytest.mark.parametrize(
    ("path", "home", "refused"),
    [
        ("/opt/venv", "/home/u", False),
        ("/root/.pyenv/versions/3.12", "/root", False),
        ("/usr/local/cuda-12.8", None, False),
        ("/srv/data", "/srv/data", True),  # the host user's home, wherever it is
        ("/srv", "/srv/u", True),  # contains a home directory
        ("/home/u/.config/gcloud", None, True),
        ("/data/.aws/keys", None, True),
        ("/etc/ssh/keys", None, True),
        ("/proc/self", None, True),
        ("/x", None, True),
    ],
)
def test_bind_rules(path: str, home: str | None, refused: bool) -> None:
    assert (bind_problem(path, home) is not None) == refused


def test_runtime_bind_syntax() -> None:
    assert parse_runtime_bind("/opt/venv/") == RuntimeBind("/opt/venv", "/opt/venv")
    assert parse_runtime_bind("/opt/a=/opt/b").dest == "/opt/b"
    with pytest.raises(RuntimeBindError, match="not absolute"):
        parse_runtime_bind("venv")


def test_gpu_selection_from_nvidia_smi_output(tmp_path: Path) -> None:
    output = "0, GPU-aaa, 00000000:19:00.0\n1, GPU-bbb, 00000000:3B:00.0\n"
    assert select_gpu(output, 1) == ("GPU-bbb", "00000000:3B:00.0")
    info = tmp_path / "0000:3b:00.0" / "information"
    info.parent.mkdir()
    info.write_text("Model: H200\nDevice Minor: \t 5\n")
    assert device_minor_from_proc("00000000:3B:00.0", tmp_path) == 5
    assert device_minor_from_proc("00000000:19:00.0", tmp_path) is None
    assert parse_gpu_selector(" 3 ") == 3


def test_cleanup_queue_retries_only_failed_removals_and_dead_owners(tmp_path: Path) -> None:
    queue = CleanupQueue(tmp_path / "q.json")
    queue.add("host", "/tmp/aka-job-a-1")
    queue.add("host", "/tmp/aka-job-b-2")
    queue.add("other", "/tmp/aka-job-c-3")
    assert queue.pending("host") == []  # both still owned by this live process
    queue.mark_failed("host", "/tmp/aka-job-a-1")
    dead = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout.strip()
    entries = json.loads((tmp_path / "q.json").read_text())
    entries[1]["pid"] = int(dead)  # a coordinator killed mid-job
    (tmp_path / "q.json").write_text(json.dumps(entries))
    assert queue.pending("host") == ["/tmp/aka-job-a-1", "/tmp/aka-job-b-2"]
    queue.remove("host", "/tmp/aka-job-a-1")
    assert queue.pending("host") == ["/tmp/aka-job-b-2"]
    with pytest.raises(ValueError, match="not a sandbox job directory"):
        queue.add("host", "/home/user")


def test_status_line_is_the_wrappers_last_line_and_cannot_be_forged_earlier() -> None:
    fake = f"\n{STATUS_MARK} rc=0 started=started error=\n"
    stderr = f"oops{fake}more output\n{STATUS_MARK} rc=3 started=started error=\n"
    text, rc, started, error = split_status(stderr)
    assert (rc, started, error) == (3, True, "") and text == f"oops{fake}more output"
    assert split_status("no status at all")[1] is None


def test_job_script_takes_the_lock_and_bounds_the_job_on_the_host(tmp_path: Path) -> None:
    root = tmp_path / "aka-job-x"
    (root / "work").mkdir(parents=True)
    script = JobScript(str(root), ["sh", "-c", "echo hi; exit 4"], 5, 0.5, str(tmp_path / "l.lock"), 10)
    text = script.render()
    assert "flock -w 10 9" in text and "timeout -k 0.5 5 sh -c" in text
    proc = subprocess.run(["sh", "-c", text], capture_output=True, text=True, check=True)
    _, rc, started, error = split_status(proc.stderr)
    assert proc.stdout == "hi\n" and rc == 4 and error == "" and not started  # no bwrap: no start report
