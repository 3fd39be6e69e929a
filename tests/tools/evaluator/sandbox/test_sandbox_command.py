"""`python -m aka_graph sandbox` and the `SandboxSpec` behind every sandbox flag."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from pydantic import ValidationError
from typer.testing import CliRunner

from aka_graph.commands.sandbox import named_inputs, register
from aka_graph.tools.evaluator.sandbox.factory import SandboxSpec, make_sandbox
from aka_graph.tools.evaluator.sandbox.local import LocalSandbox
from aka_graph.tools.evaluator.sandbox.ssh import SshSandbox
from tests.tools.evaluator.sandbox.conftest import free_port


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[tuple[CliRunner, typer.Typer]]:
    app = typer.Typer()
    register(app)

    @app.command("other")
    def other() -> None:  # a second command keeps Typer in multi-command mode, as in aka_graph.cli
        pass

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        yield CliRunner(), app
    finally:
        os.chdir(cwd)


def test_uploads_only_the_files_the_command_names_and_records_their_sha256(
    cli: tuple[CliRunner, typer.Typer], tmp_path: Path
) -> None:
    runner, app = cli
    (tmp_path / "k.py").write_text("import os; print(sorted(os.listdir('.'))); raise SystemExit(3)\n")
    (tmp_path / "secret.txt").write_text("do not upload")
    result = runner.invoke(app, ["sandbox", "--timeout", "30", "--", "python3", "k.py"])
    assert result.exit_code == 3, result.output
    assert result.stdout.strip() == "['.tmp', 'k.py']"
    manifest = json.loads((tmp_path / "sandbox-results" / "sandbox-manifest.json").read_text())
    digest = hashlib.sha256((tmp_path / "k.py").read_bytes()).hexdigest()
    assert manifest["uploaded_sha256"] == {"k.py": digest} and manifest["exit_code"] == 3
    assert f"sha256 {digest}  k.py" in result.stderr


def test_explicit_inputs_and_sync_back(cli: tuple[CliRunner, typer.Typer], tmp_path: Path) -> None:
    runner, app = cli
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.txt").write_text("x")
    args = ["sandbox", "--input", "data", "--sync", "out.txt", "--", "sh", "-c", "cat data/x.txt > out.txt"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "sandbox-results" / "out.txt").read_text() == "x"


def test_timeout_exits_124(cli: tuple[CliRunner, typer.Typer]) -> None:
    runner, app = cli
    result = runner.invoke(app, ["sandbox", "--timeout", "0.5", "--", "sleep", "10"])
    assert result.exit_code == 124 and "timed out" in result.stderr


def test_unreachable_ssh_host_exits_75(cli: tuple[CliRunner, typer.Typer], tmp_path: Path) -> None:
    runner, app = cli
    config = tmp_path / "ssh_config"
    config.write_text(f"Host nowhere\n  HostName 127.0.0.1\n  Port {free_port()}\n  User root\n")
    args = ["sandbox", "--ssh", "nowhere", "--ssh-gpu", "0", "--ssh-config", str(config), "--", "true"]
    result = runner.invoke(app, args)
    assert result.exit_code == 75, result.output
    assert "ENVIRONMENT FAILURE at transport" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ssh", "gpu-box"], "--sandbox-ssh-gpu is required"),
        (["--ssh", "gpu-box", "--ssh-gpu", "MIG-1c2d"], "MIG instances and UUID selectors are not supported"),
        (["--ssh-gpu", "0"], "only apply with --sandbox-ssh"),
        (["--runtime-bind", "/home"], "refused"),
    ],
)
def test_bad_sandbox_flags_exit_2_naming_the_flag(
    cli: tuple[CliRunner, typer.Typer], args: list[str], message: str
) -> None:
    runner, app = cli
    result = runner.invoke(app, ["sandbox", *args, "--", "true"])
    assert result.exit_code == 2 and message in result.stderr


def test_named_inputs_are_existing_paths_inside_the_cwd(tmp_path: Path) -> None:
    (tmp_path / "op").mkdir()
    (tmp_path / "kernel.py").write_text("")
    argv = [
        "python3",
        "-m",
        "harness",
        "--op-dir=op",
        "--kernel",
        "kernel.py",
        "/etc/passwd",
        "../x",
        "missing",
    ]
    assert named_inputs(argv, tmp_path) == {"op": tmp_path / "op", "kernel.py": tmp_path / "kernel.py"}


def test_spec_builds_the_sandbox_it_describes() -> None:
    assert isinstance(make_sandbox(SandboxSpec(isolation="none")), LocalSandbox)
    spec = SandboxSpec(ssh_target="user@gpu-box", ssh_gpu="2")  # type: ignore[arg-type]
    assert spec.kind == "ssh" and spec.ssh_gpu == 2
    sandbox = make_sandbox(spec)
    assert isinstance(sandbox, SshSandbox) and sandbox.gpu_index == 2
    sandbox.close()
    with pytest.raises(ValidationError, match="--sandbox-ssh-gpu is required"):
        SandboxSpec(kind="ssh", ssh_target="gpu-box")


def test_a_spec_without_gpu_index_keeps_the_local_default_gpu_on_an_nvidia_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Found on the H200: a spec with no index gave jobs no GPU at all, so the health probe saw no CUDA.
    real_exists = Path.exists
    monkeypatch.setattr(Path, "exists", lambda p: str(p) == "/dev/nvidiactl" or real_exists(p))
    assert make_sandbox(SandboxSpec(isolation="none")).gpu_index == 0
    assert make_sandbox(SandboxSpec(isolation="none", gpu_index=1)).gpu_index == 1
