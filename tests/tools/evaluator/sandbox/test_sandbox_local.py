"""LocalSandbox: fresh job directory, exact environment, hard timeouts, isolation, health verdicts."""

from __future__ import annotations

import hashlib
import logging
import socket
import sys
import threading
import uuid
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.sandbox import EXIT_ENVIRONMENT, EXIT_TIMEOUT, SandboxJob
from aka_graph.tools.evaluator.sandbox.local import LocalSandbox, SandboxConfigError
from tests.tools.evaluator.sandbox.conftest import FAKE_GPUS, live_pids_with_marker, process_alive

ISOLATIONS = [pytest.param("none"), pytest.param("bwrap", marks=pytest.mark.bwrap)]


def make(isolation: str, cpu_probe: list[str], **kw: object) -> LocalSandbox:
    return LocalSandbox(isolation=isolation, health_command=cpu_probe, kill_grace_s=0.5, **kw)  # type: ignore[arg-type]


@pytest.fixture(params=ISOLATIONS)
def sandbox(request: pytest.FixtureRequest, cpu_probe: list[str]) -> LocalSandbox:
    if request.param == "bwrap":
        request.getfixturevalue("bwrap_path")
    return make(request.param, cpu_probe)


def test_inputs_are_uploaded_hashed_and_requested_outputs_synced_back(
    sandbox: LocalSandbox, tmp_path: Path
) -> None:
    (tmp_path / "kernel.py").write_text("print('kernel')\n")
    op = tmp_path / "op"
    (op / "sub").mkdir(parents=True)
    (op / "definition.json").write_text("{}")
    (op / "sub" / "w.txt").write_text("weights")
    (tmp_path / "not_listed.txt").write_text("secret")
    job = SandboxJob(
        argv=[
            "sh",
            "-c",
            "ls -R > listing.txt; mkdir out; cp kernel.py out/; cat op/sub/w.txt > out/w; echo hi",
        ],
        inputs={"kernel.py": tmp_path / "kernel.py", "op": op},
        sync_back=["listing.txt", "out", "missing.txt"],
        timeout_s=30,
    )
    result = sandbox.run(job, tmp_path / "results")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "hi\n"
    assert set(result.synced) == {"listing.txt", "out"}
    listing = (tmp_path / "results" / "listing.txt").read_text()
    assert "kernel.py" in listing and "w.txt" in listing and "not_listed" not in listing
    assert (tmp_path / "results" / "out" / "w").read_text() == "weights"
    expected = hashlib.sha256(b"print('kernel')\n").hexdigest()
    assert result.input_sha256 == {
        "kernel.py": expected,
        "op/definition.json": hashlib.sha256(b"{}").hexdigest(),
        "op/sub/w.txt": hashlib.sha256(b"weights").hexdigest(),
    }
    (tmp_path / "kernel.py").write_text("edited later\n")
    assert result.input_sha256["kernel.py"] == expected


def test_environment_is_exactly_the_jobs_plus_what_the_sandbox_sets(
    sandbox: LocalSandbox, tmp_path: Path
) -> None:
    job = SandboxJob(argv=["env"], env={"AKA_MARK": "1", "TRITON_INTERPRET": "1"}, timeout_s=30)
    result = sandbox.run(job, tmp_path)
    keys = {line.split("=", 1)[0] for line in result.stdout.splitlines()}
    told = {"AKA_SANDBOX_ISOLATION"} if sandbox.isolation != "none" else set()  # read by the harness
    assert keys - {"PWD", "SHLVL", "_"} == {"AKA_MARK", "TRITON_INTERPRET", "PATH", "HOME", "TMPDIR", *told}
    home = next(line for line in result.stdout.splitlines() if line.startswith("HOME="))
    assert "/aka-job-" in home


def test_host_gpu_runtime_variables_pass_through_unless_the_job_sets_them(
    tmp_path: Path, cpu_probe: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64")
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "never-inside")
    sandbox = make("none", cpu_probe)
    result = sandbox.run(SandboxJob(argv=["env"], env={"NCCL_NVLS_ENABLE": "1"}, timeout_s=30), tmp_path)
    env = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64" and env["NCCL_NVLS_ENABLE"] == "1"
    assert "AWS_SECRET_ACCESS_KEY" not in env


def test_jobs_get_gpu_0_by_default_only_on_a_host_with_nvidia_devices(cpu_probe: list[str]) -> None:
    expected = 0 if Path("/dev/nvidiactl").exists() else None
    assert make("none", cpu_probe).gpu_index == expected
    assert make("none", cpu_probe, gpu_index=None).gpu_index is None


def test_timeout_kills_grandchildren_that_ignore_sigterm(sandbox: LocalSandbox, tmp_path: Path) -> None:
    marker = f"{uuid.uuid4().int % 10**6 + 10**6}.5"
    script = (
        "trap '' TERM\n"
        f"(trap '' TERM; sleep {marker} & echo $! >> pids; (trap '' TERM; sleep {marker}) & echo $! >> pids;"
        f" wait) &\necho $! >> pids\nsleep {marker} & echo $! >> pids\nwait\n"
    )
    job = SandboxJob(argv=["sh", "-c", script], sync_back=["pids"], timeout_s=1.0)
    result = sandbox.run(job, tmp_path)
    assert result.exit_code == EXIT_TIMEOUT and result.timed_out
    assert result.environment_failure is None
    assert live_pids_with_marker(marker) == []
    if sandbox.isolation == "none":  # pids from inside a PID namespace mean nothing out here
        pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
        assert len(pids) == 4
        assert not [pid for pid in pids if process_alive(pid)]


def test_background_leftovers_of_a_finished_job_are_killed(sandbox: LocalSandbox, tmp_path: Path) -> None:
    marker = f"{uuid.uuid4().int % 10**6 + 10**6}.25"
    job = SandboxJob(
        argv=["sh", "-c", f"(trap '' TERM; sleep {marker}) > /dev/null 2>&1 & echo started"], timeout_s=30
    )
    result = sandbox.run(job, tmp_path)
    assert result.exit_code == 0 and result.stdout == "started\n"
    assert live_pids_with_marker(marker) == []


def test_failed_command_with_healthy_probe_keeps_its_own_status(
    sandbox: LocalSandbox, tmp_path: Path
) -> None:
    result = sandbox.run(SandboxJob(argv=["sh", "-c", "echo boom >&2; exit 3"], timeout_s=30), tmp_path)
    assert (result.exit_code, result.stderr, result.environment_failure) == (3, "boom\n", None)
    result = sandbox.run(SandboxJob(argv=["sh", "-c", "exit 255"], timeout_s=30), tmp_path)
    assert result.exit_code == 255 and not result.is_environment_failure


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_failed_command_with_failing_probe_is_an_environment_failure(
    isolation: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if isolation == "bwrap":
        request.getfixturevalue("bwrap_path")
    sandbox = LocalSandbox(
        isolation=isolation, health_command=["sh", "-c", "echo GPU fell off the bus; exit 1"]
    )  # type: ignore[arg-type]
    result = sandbox.run(SandboxJob(argv=["sh", "-c", "exit 1"], timeout_s=30), tmp_path)
    assert result.exit_code == EXIT_ENVIRONMENT and result.is_environment_failure
    assert result.environment_failure is not None
    assert result.environment_failure.stage == "health"
    assert "GPU fell off the bus" in result.environment_failure.diagnostic
    ok = sandbox.run(SandboxJob(argv=["true"], timeout_s=30), tmp_path)
    assert ok.exit_code == 0  # a passing command never needs the probe


def test_default_health_probe_runs_as_a_job_and_reports_the_device(tmp_path: Path) -> None:
    report = LocalSandbox(isolation="auto").health()
    assert report.healthy, report.diagnostic
    assert report.device["torch"]


@pytest.mark.bwrap
def test_network_is_unreachable_inside_bwrap_but_reachable_without(
    bwrap_path: str, cpu_probe: list[str], tmp_path: Path
) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        code = (
            f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')"
        )
        job = SandboxJob(argv=[sys.executable, "-c", code], timeout_s=30)
        isolated = make("bwrap", cpu_probe).run(job, tmp_path)
        assert isolated.exit_code == 1 and "connected" not in isolated.stdout
        assert "Error" in isolated.stderr
        open_result = make("none", cpu_probe).run(job, tmp_path)
        assert open_result.stdout == "connected\n"


@pytest.mark.bwrap
def test_only_the_job_directory_is_writable_and_secrets_are_invisible(
    bwrap_path: str, cpu_probe: list[str], tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    script = (
        f"echo x > {outside} 2>/dev/null && echo wrote-outside;"
        " echo x > /etc/aka_probe 2>/dev/null && echo wrote-etc;"
        f" echo x > /usr/aka_probe 2>/dev/null && echo wrote-usr; echo x > inside.txt && echo wrote-inside;"
        " ls /root/.ssh /etc/ssh /etc/shadow 2>/dev/null && echo saw-secrets; echo done"
    )
    result = make("bwrap", cpu_probe).run(
        SandboxJob(argv=["sh", "-c", script], sync_back=["inside.txt"], timeout_s=30), tmp_path / "r"
    )
    assert result.stdout == "wrote-inside\ndone\n"
    assert not outside.exists() and not Path("/etc/aka_probe").exists()
    assert (tmp_path / "r" / "inside.txt").read_text() == "x\n"


@pytest.mark.bwrap
def test_gpu_job_sees_its_gpu_by_uuid_and_only_its_device_nodes(
    bwrap_path: str, cpu_probe: list[str], fake_nvidia_smi: Path, tmp_path: Path
) -> None:
    sandbox = make("bwrap", cpu_probe, nvidia_smi=str(fake_nvidia_smi))
    result = sandbox.run(
        SandboxJob(argv=["sh", "-c", "echo $CUDA_VISIBLE_DEVICES"], gpu_index=1, timeout_s=30), tmp_path
    )
    assert result.stdout.strip() == FAKE_GPUS[1]
    uuid_, nodes = sandbox._gpu(1)
    config = sandbox._bwrap_config("/tmp/job", {"CUDA_VISIBLE_DEVICES": uuid_}, nodes)
    from aka_graph.tools.evaluator.sandbox.isolation import bwrap_argv

    argv = bwrap_argv(config, ["true"])
    dev_binds = [argv[i + 1] for i, a in enumerate(argv) if a == "--dev-bind-try"]
    assert dev_binds == ["/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    assert "--unshare-net" in argv and "--unshare-pid" in argv and "--cap-drop" in argv
    assert argv[argv.index("--dev") + 1] == "/dev"  # a fresh /dev: no other GPU's node exists inside


def test_unknown_gpu_index_is_an_environment_failure_naming_the_gpus(
    cpu_probe: list[str], fake_nvidia_smi: Path, tmp_path: Path
) -> None:
    sandbox = make("none", cpu_probe, nvidia_smi=str(fake_nvidia_smi))
    result = sandbox.run(SandboxJob(argv=["true"], gpu_index=5, timeout_s=30), tmp_path)
    assert result.exit_code == EXIT_ENVIRONMENT and result.environment_failure is not None
    assert result.environment_failure.stage == "preflight"
    assert "GPU index 5 not found" in result.environment_failure.diagnostic and FAKE_GPUS[0] in (
        result.environment_failure.diagnostic
    )


@pytest.mark.bwrap
def test_bwrap_setup_failure_is_an_environment_failure(
    bwrap_path: str, cpu_probe: list[str], tmp_path: Path
) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    sandbox = make("bwrap", cpu_probe, runtime_binds=[str(runtime)])
    runtime.rmdir()  # the runtime vanished between configuration and the job
    result = sandbox.run(SandboxJob(argv=["true"], timeout_s=30), tmp_path / "r")
    assert result.exit_code == EXIT_ENVIRONMENT and result.environment_failure is not None
    assert result.environment_failure.stage == "run" and "bubblewrap" in result.environment_failure.diagnostic


def test_gpu_lock_serialises_exclusive_jobs_and_only_those(cpu_probe: list[str], tmp_path: Path) -> None:
    def overlapping(exclusive: bool) -> bool:
        spans: list[tuple[float, float]] = []
        script = "date +%s.%N > t0; sleep 0.8; date +%s.%N > t1"

        def one(n: int) -> None:
            job = SandboxJob(
                argv=["sh", "-c", script], sync_back=["t0", "t1"], timeout_s=30, exclusive_gpu=exclusive
            )
            out = tmp_path / f"{exclusive}-{n}"
            LocalSandbox(isolation="none", health_command=cpu_probe, lock_dir=tmp_path).run(job, out)
            spans.append((float((out / "t0").read_text()), float((out / "t1").read_text())))

        threads = [threading.Thread(target=one, args=(n,)) for n in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        (_, a1), (b0, _) = sorted(spans)
        return b0 < a1

    assert overlapping(exclusive=False)
    assert not overlapping(exclusive=True)
    assert (tmp_path / "aka_graph-gpudefault.lock").exists()


def test_isolation_choice_is_explicit(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(SandboxConfigError, match="bubblewrap"):
        LocalSandbox(isolation="bwrap", bwrap="no-such-bwrap")
    with caplog.at_level(logging.WARNING):
        sandbox = LocalSandbox(isolation="auto", bwrap="no-such-bwrap")
    assert sandbox.isolation in ("unshare", "none")  # user namespaces where bubblewrap is missing
    assert sandbox.isolation == "unshare" or "WITHOUT isolation" in caplog.text
    with pytest.raises(SandboxConfigError, match="--isolation"):
        LocalSandbox(isolation="docker")  # type: ignore[arg-type]


@pytest.mark.bwrap
def test_auto_isolation_uses_bubblewrap_when_present(bwrap_path: str) -> None:
    assert LocalSandbox(isolation="auto").isolation == "bwrap"


def test_missing_command_is_the_candidates_127(cpu_probe: list[str], tmp_path: Path) -> None:
    result = make("none", cpu_probe).run(SandboxJob(argv=["./no-such-binary"], timeout_s=30), tmp_path)
    assert result.exit_code == 127 and "cannot execute" in result.stderr


def _userns_or_skip() -> None:
    from aka_graph.tools.evaluator.harness.isolate import unavailable

    if unavailable() is not None:
        pytest.skip(f"user namespaces unavailable: {unavailable()}")


def test_unshare_isolation_keeps_the_job_in_its_directory_off_the_network_and_alone(
    cpu_probe: list[str], tmp_path: Path
) -> None:
    """Issue 13 class 8: where bubblewrap is missing, user namespaces: read-only everywhere but the job
    directory, no network, no other process visible (the evaluator's command line included)."""
    _userns_or_skip()
    outside = tmp_path / "outside.txt"
    script = (
        f"echo x > {outside} 2>/dev/null && echo wrote-outside;"
        " echo x > /tmp/aka_probe_$$ 2>/dev/null && echo wrote-tmp;"
        " echo x > inside.txt && echo wrote-inside;"
        " ls /proc | grep -c '^[0-9]' ;"
        f" {sys.executable} -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), 2)'"
        " 2>/dev/null && echo connected; echo done"
    )
    result = make("unshare", cpu_probe).run(
        SandboxJob(argv=["sh", "-c", script], sync_back=["inside.txt"], timeout_s=60), tmp_path / "r"
    )
    lines = result.stdout.split()
    assert lines[0] == "wrote-inside" and lines[-1] == "done", result.stdout + result.stderr
    assert int(lines[1]) <= 6  # sh, ls, grep (and the jail's own): nothing of the host
    assert "connected" not in lines and not outside.exists()
    assert (tmp_path / "r" / "inside.txt").read_text() == "x\n"
