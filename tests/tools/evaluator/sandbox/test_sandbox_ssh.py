"""SshSandbox against a real sshd on 127.0.0.1 with real bubblewrap on the 'host'."""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.sandbox import EXIT_ENVIRONMENT, EXIT_TIMEOUT, SandboxJob
from aka_graph.tools.evaluator.sandbox.binds import RuntimeBindError
from aka_graph.tools.evaluator.sandbox.gpu import GpuSelectionError
from aka_graph.tools.evaluator.sandbox.ssh import SshSandbox
from tests.tools.evaluator.sandbox.conftest import (
    FAKE_GPUS,
    Sshd,
    live_pids_with_marker,
    python_runtime_binds,
)

pytestmark = [pytest.mark.ssh, pytest.mark.bwrap]
QUICK_PREFLIGHT = f"{sys.executable} -c 'import json'"


def make(sshd: Sshd, fake_nvidia_smi: Path, queue: Path, **kw: object) -> SshSandbox:
    options: dict[str, object] = {
        "ssh_config": sshd.ssh_config,
        "nvidia_smi": str(fake_nvidia_smi),
        "runtime_binds": python_runtime_binds(),
        "preflight_command": QUICK_PREFLIGHT,
        "cleanup_queue": queue,
        "kill_grace_s": 0.5,
    }
    options.update(kw)
    return SshSandbox("aka-test-host", 0, **options)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def remote(
    sshd: Sshd,
    fake_nvidia_smi: Path,
    cpu_probe: list[str],
    bwrap_path: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SshSandbox]:
    queue = tmp_path_factory.mktemp("queue") / "queue.json"
    with make(sshd, fake_nvidia_smi, queue, health_command=cpu_probe) as sandbox:
        yield sandbox


def job_dirs(label: str) -> list[Path]:
    return list(Path("/tmp").glob(f"aka-job-{label}-*"))


def test_round_trip_uploads_only_the_allowlist_and_downloads_only_requested_paths(
    remote: SshSandbox, tmp_path: Path
) -> None:
    (tmp_path / "kernel.py").write_text("K = 1\n")
    (tmp_path / "op").mkdir()
    (tmp_path / "op" / "definition.json").write_text('{"name": "x"}')
    (tmp_path / "unlisted").write_text("no")
    label = f"rt{uuid.uuid4().hex[:8]}"
    script = (
        "ls -R . > listing; mkdir -p out/deep; echo r > out/deep/r.txt; ln -s /etc/passwd out/leak;"
        " ln -s /etc/passwd leak; cat op/definition.json; echo -n err >&2"
    )
    job = SandboxJob(
        argv=["sh", "-c", script],
        inputs={"kernel.py": tmp_path / "kernel.py", "op": tmp_path / "op"},
        sync_back=["listing", "out", "leak", "absent"],
        timeout_s=30,
        label=label,
    )
    result = remote.run(job, tmp_path / "results")
    assert result.exit_code == 0, result
    assert (result.stdout, result.stderr) == ('{"name": "x"}', "err")
    assert set(result.synced) == {"listing", "out"}
    listing = (tmp_path / "results" / "listing").read_text()
    assert "kernel.py" in listing and "definition.json" in listing and "unlisted" not in listing
    assert (tmp_path / "results" / "out" / "deep" / "r.txt").read_text() == "r\n"
    assert not (tmp_path / "results" / "out" / "leak").exists()
    assert result.input_sha256["kernel.py"] == hashlib.sha256(b"K = 1\n").hexdigest()
    assert job_dirs(label) == []  # the remote job directory is gone


def test_jobs_see_the_gpu_by_uuid_and_exactly_their_environment(remote: SshSandbox, tmp_path: Path) -> None:
    result = remote.run(SandboxJob(argv=["env"], env={"AKA_X": "1"}, timeout_s=30), tmp_path)
    env = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert env["CUDA_VISIBLE_DEVICES"] == FAKE_GPUS[0]
    assert set(env) - {"PWD", "SHLVL", "_"} == {"AKA_X", "PATH", "HOME", "TMPDIR", "CUDA_VISIBLE_DEVICES"}


def test_timeout_kills_the_whole_remote_tree(remote: SshSandbox, tmp_path: Path) -> None:
    marker = f"{uuid.uuid4().int % 10**6 + 10**6}.75"
    script = f"trap '' TERM; (trap '' TERM; sleep {marker}) & (trap '' TERM; sleep {marker} & wait) & wait"
    result = remote.run(SandboxJob(argv=["sh", "-c", script], timeout_s=1), tmp_path)
    assert result.exit_code == EXIT_TIMEOUT and result.timed_out and result.environment_failure is None
    assert live_pids_with_marker(marker) == []


def test_network_is_unreachable_and_only_the_job_dir_is_writable(remote: SshSandbox, tmp_path: Path) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        outside = tmp_path / "outside"
        code = (
            "import socket\n"
            f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')\n"
            "except OSError as e:\n    print('no network')\n"
            f"try:\n    open({str(outside)!r}, 'w'); print('wrote outside')\n"
            "except OSError:\n    print('read-only outside')\n"
            "open('inside', 'w').write('ok'); print('wrote inside')\n"
        )
        result = remote.run(SandboxJob(argv=[sys.executable, "-c", code], timeout_s=30), tmp_path)
    assert result.stdout.split("\n") == ["no network", "read-only outside", "wrote inside", ""], result
    assert not outside.exists()


def test_failed_command_keeps_its_status_when_the_host_is_healthy(remote: SshSandbox, tmp_path: Path) -> None:
    result = remote.run(SandboxJob(argv=["sh", "-c", "exit 255"], timeout_s=30), tmp_path)
    assert result.exit_code == 255 and result.environment_failure is None


def test_failed_command_with_failing_probe_is_exit_75(
    sshd: Sshd, fake_nvidia_smi: Path, tmp_path: Path, bwrap_path: str
) -> None:
    with make(
        sshd, fake_nvidia_smi, tmp_path / "q.json", health_command=["sh", "-c", "echo no GPU; exit 1"]
    ) as sb:
        result = sb.run(SandboxJob(argv=["false"], timeout_s=30), tmp_path)
    assert result.exit_code == EXIT_ENVIRONMENT and result.environment_failure is not None
    assert result.environment_failure.stage == "health" and "no GPU" in result.environment_failure.diagnostic


def test_unknown_host_key_is_exit_75(sshd: Sshd, fake_nvidia_smi: Path, tmp_path: Path) -> None:
    other = tmp_path / "other_key"
    import subprocess

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[127.0.0.1]:{sshd.port} {(tmp_path / 'other_key.pub').read_text()}")
    with make(sshd, fake_nvidia_smi, tmp_path / "q.json", known_hosts=wrong) as sandbox:
        result = sandbox.run(SandboxJob(argv=["true"], timeout_s=30), tmp_path)
    assert result.exit_code == EXIT_ENVIRONMENT and result.environment_failure is not None
    assert result.environment_failure.stage == "transport"
    assert "HostKeyNotVerifiable" in result.environment_failure.diagnostic


def test_refused_authentication_is_exit_75(sshd: Sshd, fake_nvidia_smi: Path, tmp_path: Path) -> None:
    import subprocess

    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    config = tmp_path / "ssh_config"
    config.write_text(sshd.ssh_config.read_text().replace(str(sshd.client_key), str(stranger)))
    with make(sshd, fake_nvidia_smi, tmp_path / "q.json", ssh_config=config) as sandbox:
        result = sandbox.run(SandboxJob(argv=["true"], timeout_s=30), tmp_path)
    assert result.exit_code == EXIT_ENVIRONMENT and result.environment_failure is not None
    assert result.environment_failure.stage == "transport"
    assert "PermissionDenied" in result.environment_failure.diagnostic


def test_failed_preflight_is_exit_75_and_never_runs_the_job(
    sshd: Sshd, fake_nvidia_smi: Path, tmp_path: Path
) -> None:
    preflight = f"{sys.executable} -c 'import no_such_framework'"
    with make(sshd, fake_nvidia_smi, tmp_path / "q.json", preflight_command=preflight) as sandbox:
        result = sandbox.run(SandboxJob(argv=["touch", str(tmp_path / "ran")], timeout_s=30), tmp_path)
    assert result.exit_code == EXIT_ENVIRONMENT and result.environment_failure is not None
    assert result.environment_failure.stage == "preflight"
    assert "no_such_framework" in result.environment_failure.diagnostic
    assert not (tmp_path / "ran").exists()


def test_init_command_runs_once_per_connection_on_the_host_and_its_failure_is_exit_75(
    sshd: Sshd, fake_nvidia_smi: Path, tmp_path: Path
) -> None:
    log = tmp_path / "init.log"
    with make(sshd, fake_nvidia_smi, tmp_path / "q.json", init_command=f"echo init >> {log}") as sandbox:
        for _ in range(2):
            assert sandbox.run(SandboxJob(argv=["true"], timeout_s=30), tmp_path).exit_code == 0
    assert log.read_text() == "init\n"
    with make(sshd, fake_nvidia_smi, tmp_path / "q.json", init_command="exit 3") as sandbox:
        result = sandbox.run(SandboxJob(argv=["true"], timeout_s=30), tmp_path)
    assert result.exit_code == EXIT_ENVIRONMENT and result.environment_failure is not None
    assert (
        result.environment_failure.stage == "preflight"
        and "init command" in result.environment_failure.diagnostic
    )


@pytest.mark.slow
def test_sshd_killed_mid_job_is_exit_75_and_the_remote_dir_is_cleaned_when_it_returns(
    sshd: Sshd, fake_nvidia_smi: Path, cpu_probe: list[str], tmp_path: Path
) -> None:
    queue = tmp_path / "queue.json"
    label = f"kill{uuid.uuid4().hex[:8]}"
    marker = f"{uuid.uuid4().int % 10**6 + 10**6}.125"
    sandbox = make(sshd, fake_nvidia_smi, queue, health_command=cpu_probe)
    outcome: dict[str, object] = {}
    runner = threading.Thread(
        target=lambda: outcome.update(
            r=sandbox.run(SandboxJob(argv=["sleep", marker], timeout_s=60, label=label), tmp_path / "r")
        )
    )
    runner.start()
    try:
        deadline = time.monotonic() + 20
        while not live_pids_with_marker(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert live_pids_with_marker(marker), "the job never started on the host"
        sshd.kill_hard()
        runner.join(timeout=30)
        result = outcome["r"]
        assert result.exit_code == EXIT_ENVIRONMENT  # type: ignore[attr-defined]
        assert result.environment_failure.stage == "transport"  # type: ignore[attr-defined]
        assert job_dirs(label), "the host was gone, so the directory is still there"
        entries = json.loads(queue.read_text())
        assert [e["failed"] for e in entries] == [True]
        refused = sandbox.run(SandboxJob(argv=["true"], timeout_s=10), tmp_path / "r2")
        assert refused.exit_code == EXIT_ENVIRONMENT and refused.environment_failure.stage == "transport"  # type: ignore[union-attr]
    finally:
        if sshd.proc is None:
            sshd.start()
    after = sandbox.run(SandboxJob(argv=["true"], timeout_s=10), tmp_path / "r3")
    sandbox.close()
    assert after.exit_code == 0
    assert job_dirs(label) == []
    assert json.loads(queue.read_text()) == []


def test_a_dropped_connection_stops_the_remote_job(
    sshd: Sshd, fake_nvidia_smi: Path, cpu_probe: list[str], tmp_path: Path
) -> None:
    marker = f"{uuid.uuid4().int % 10**6 + 10**6}.375"
    sandbox = make(sshd, fake_nvidia_smi, tmp_path / "q.json", health_command=cpu_probe)
    outcome: dict[str, object] = {}
    script = f"trap '' TERM; sleep {marker}"
    job = SandboxJob(argv=["sh", "-c", script], timeout_s=120)
    runner = threading.Thread(target=lambda: outcome.update(r=sandbox.run(job, tmp_path)))
    runner.start()
    deadline = time.monotonic() + 20
    while not live_pids_with_marker(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_pids_with_marker(marker)
    sandbox.disconnect()
    runner.join(timeout=30)
    assert outcome["r"].environment_failure.stage == "transport"  # type: ignore[attr-defined]
    deadline = time.monotonic() + 10
    while live_pids_with_marker(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert live_pids_with_marker(marker) == []
    sandbox.close()


def test_gpu_lock_serialises_exclusive_jobs_on_the_host(remote: SshSandbox, tmp_path: Path) -> None:
    spans: list[tuple[float, float]] = []
    script = "date +%s.%N > t0; sleep 0.5; date +%s.%N > t1"

    def one(n: int) -> None:
        job = SandboxJob(argv=["sh", "-c", script], sync_back=["t0", "t1"], timeout_s=30, exclusive_gpu=True)
        result = remote.run(job, tmp_path / str(n))
        assert result.exit_code == 0, result
        spans.append(
            (float((tmp_path / str(n) / "t0").read_text()), float((tmp_path / str(n) / "t1").read_text()))
        )

    threads = [threading.Thread(target=one, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (_, first_end), (second_start, _) = sorted(spans)
    assert second_start >= first_end
    assert Path(f"/tmp/aka_graph-gpu{FAKE_GPUS[0]}.lock").exists()


@pytest.mark.parametrize("bind", ["/", "/home", "/root", "/root/.ssh", "/etc", "/home/alice", "/opt/x/.aws"])
def test_broad_or_credential_runtime_binds_are_refused(bind: str) -> None:
    with pytest.raises(RuntimeBindError, match="refused"):
        SshSandbox("aka-test-host", 0, runtime_binds=[bind])


def test_runtime_bind_through_a_symlink_is_resolved_on_the_host_and_refused(
    sshd: Sshd, fake_nvidia_smi: Path, tmp_path: Path
) -> None:
    innocent = tmp_path / "venv"
    innocent.symlink_to("/etc/ssh")
    sandbox = make(sshd, fake_nvidia_smi, tmp_path / "q.json", runtime_binds=[str(innocent)])
    with sandbox, pytest.raises(RuntimeBindError, match="resolved source /etc/ssh"):
        sandbox.preflight()


@pytest.mark.parametrize("selector", ["MIG-4f6c-aaaa", "GPU-1234", "0:1", "first"])
def test_gpu_must_be_an_index_not_a_uuid_or_mig_selector(selector: str) -> None:
    with pytest.raises(GpuSelectionError, match="integer index"):
        SshSandbox("aka-test-host", selector)  # type: ignore[arg-type]


def test_unknown_gpu_index_on_the_host_names_its_gpus(
    sshd: Sshd, fake_nvidia_smi: Path, tmp_path: Path
) -> None:
    sandbox = SshSandbox(
        "aka-test-host",
        7,
        ssh_config=sshd.ssh_config,
        nvidia_smi=str(fake_nvidia_smi),
        preflight_command=None,
        cleanup_queue=tmp_path / "q.json",
    )
    with sandbox, pytest.raises(GpuSelectionError, match=f"GPU index 7 not found.*{FAKE_GPUS[1]}"):
        sandbox.preflight()
