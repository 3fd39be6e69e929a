"""Other processes on the evaluation's GPU (gpu_neighbours.py): a clock dispute on a shared GPU is the
environment's (INFRA_ERROR naming it), on a GPU the evaluation had to itself it stays REWARD_HACK. The
driver is asked through nvidia-smi; here a stand-in script prints what nvidia-smi prints."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.harness import gpu_neighbours
from aka_graph.tools.evaluator.harness.gpu_neighbours import (
    compute_apps,
    holding_a_gpu,
    others_on_gpu,
    shared_gpu_verdict,
    strangers,
)

OURS = "GPU-5a1c7e3e-0b8e-4f2d-9a61-2f0c3d4e5f60"
NEIGHBOUR = "GPU-77aa0000-1111-2222-3333-444455556666"
DISPUTE = ("REWARD_HACK", "the worker reported 5.789 us per call, but the harness's own clock times a burst")


def test_nvidia_smis_csv_is_read_and_its_other_lines_ignored() -> None:
    text = f"13772, {OURS}\n14001, {NEIGHBOUR}\nNo running processes found\n[N/A], {OURS}\n"
    assert compute_apps(text) == [(13772, OURS), (14001, NEIGHBOUR)]


def test_only_processes_on_this_gpu_that_are_not_ours_count() -> None:
    apps = [(100, OURS), (101, OURS), (200, OURS), (300, NEIGHBOUR)]
    assert strangers(apps, {100, 101}, OURS, 2) == 1
    assert strangers(apps, {100, 101}, OURS.removeprefix("GPU-").upper(), 2) == 1  # torch's spelling
    assert strangers(apps, {100, 101, 200}, OURS, 3) == 0
    assert strangers(apps, {100, 101}, None, 2) == 2  # the GPU unknown: every GPU's


def test_pids_of_another_namespace_are_counted_against_the_contexts_we_hold() -> None:
    apps = [(9001, OURS), (9002, OURS), (9003, OURS)]
    assert strangers(apps, {1, 7, 8, 9}, OURS, 2) == 1  # a jail's pids: 4 processes, 2 with a context
    assert strangers(apps[:2], {1, 7, 8, 9}, OURS, 2) == 0


def test_a_process_holding_a_device_file_open_is_counted_once(tmp_path: Path) -> None:
    device = tmp_path / "nvidia0"  # a stand-in for /dev/nvidia0, opened twice by this process
    device.write_text("")
    pattern = re.compile(re.escape(str(tmp_path)) + r"/nvidia\d+")
    assert holding_a_gpu({os.getpid()}, pattern) == 0
    with device.open() as a, device.open() as b:
        assert a and b
        assert holding_a_gpu({os.getpid(), 2**22 + 11}, pattern) == 1  # the second pid: no such process
    assert holding_a_gpu({os.getpid()}, pattern) == 0


def _fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")


def test_nvidia_smi_is_asked_and_silence_or_failure_is_no_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_smi(tmp_path, monkeypatch, f'echo "{os.getpid()}, {OURS}"\necho "4242, {OURS}"\n')
    assert others_on_gpu({os.getpid()}, OURS) == 1
    _fake_smi(tmp_path, monkeypatch, "exit 9\n")
    assert others_on_gpu({os.getpid()}, OURS) is None
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert others_on_gpu({os.getpid()}, OURS) is None


def test_our_device_files_are_read_only_where_the_driver_lists_no_pid_of_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Walking every descriptor of our processes is wasted where the driver's pids are ours."""
    walked: list[set[int]] = []
    monkeypatch.setattr(gpu_neighbours, "holding_a_gpu", lambda pids: walked.append(pids) or 1)
    _fake_smi(tmp_path, monkeypatch, f'echo "{os.getpid()}, {OURS}"\necho "4242, {OURS}"\n')
    assert others_on_gpu({os.getpid()}, OURS) == 1 and walked == []
    _fake_smi(tmp_path, monkeypatch, f'echo "17, {OURS}"\necho "18, {OURS}"\n')  # a sandbox's namespace
    assert others_on_gpu({os.getpid()}, OURS) == 1 and walked == [{os.getpid()}]


def test_a_dispute_on_a_shared_gpu_is_the_environments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpu_neighbours, "device_uuid", lambda device: OURS)
    _fake_smi(
        tmp_path, monkeypatch, f'echo "{os.getpid()}, {OURS}"\necho "4242, {OURS}"\necho "4243, {OURS}"\n'
    )
    status, message = shared_gpu_verdict(DISPUTE, "cuda:0")
    assert status == "INFRA_ERROR"
    assert message.startswith(DISPUTE[1]) and "2 other process(es) held this GPU" in message


def test_a_dispute_on_a_gpu_of_its_own_stays_a_reward_hack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpu_neighbours, "device_uuid", lambda device: OURS)
    _fake_smi(tmp_path, monkeypatch, f'echo "{os.getpid()}, {OURS}"\necho "4242, {NEIGHBOUR}"\n')
    assert shared_gpu_verdict(DISPUTE, "cuda:0") == DISPUTE
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))  # no nvidia-smi: nothing is excused
    assert shared_gpu_verdict(DISPUTE, "cuda:0") == DISPUTE
