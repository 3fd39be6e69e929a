"""Shared sandbox fixtures: real bubblewrap, a CPU health probe, a fake `nvidia-smi`, a real sshd."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import aka_graph.tools.evaluator.health as health_module

FAKE_GPUS = {0: "GPU-00000000-1111-2222-3333-444444444444", 1: "GPU-11111111-aaaa-bbbb-cccc-dddddddddddd"}


@pytest.fixture(scope="session")
def bwrap_path() -> str:
    """bubblewrap is a real dependency of these tests (`.ci/run` installs it)."""
    path = shutil.which("bwrap")
    if path is None:
        pytest.fail("bubblewrap is not installed: apt-get install bubblewrap (as .ci/run does)")
    return path


@pytest.fixture(scope="session")
def cpu_probe() -> list[str]:
    """The real health probe in its CPU mode (no GPU here), self-contained (`python -c SOURCE --cpu`)."""
    return [sys.executable, "-c", Path(health_module.__file__).read_text(), "--cpu"]


@pytest.fixture(scope="session")
def fake_nvidia_smi(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Prints what `nvidia-smi --query-gpu=index,uuid,pci.bus_id` prints on a 2-GPU host."""
    script = tmp_path_factory.mktemp("fake-gpu") / "nvidia-smi"
    lines = "\n".join(f"{i}, {uuid}, 00000000:{0x19 + i:02X}:00.0" for i, uuid in FAKE_GPUS.items())
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{lines}\nEOF\n")
    script.chmod(0o755)
    return script


def python_runtime_binds() -> list[str]:
    """Read-only binds that make this interpreter usable in a bwrap job on the SSH 'host' (/usr is bound)."""
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
    return sorted(p for p in prefixes if p != "/usr" and not p.startswith("/usr/"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def process_alive(pid: int) -> bool:
    """True if `pid` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def live_pids_with_marker(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains `marker`."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if marker in cmdline and process_alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def descendants(root_pid: int) -> list[int]:
    """All descendants of `root_pid` (by parent pid), deepest last."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    out, stack = [], [root_pid]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


@dataclass
class Sshd:
    """A real OpenSSH server on 127.0.0.1 with its own host key and one authorized client key."""

    port: int
    config_path: Path
    client_key: Path
    known_hosts: Path
    ssh_config: Path  # an OpenSSH client config with the alias `aka-test-host`
    home: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["/usr/sbin/sshd", "-D", "-e", "-f", str(self.config_path)],
            stdout=subprocess.DEVNULL,
            stderr=(self.home / "sshd.log").open("ab"),
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    if sock.recv(4).startswith(b"SSH"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(
            f"sshd did not come up on port {self.port}: {(self.home / 'sshd.log').read_text()}"
        )

    def kill_hard(self) -> None:
        """The host goes away: SIGKILL the listener and every session process under it."""
        if self.proc is None:
            return
        for pid in [self.proc.pid, *descendants(self.proc.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def stop(self) -> None:
        self.kill_hard()


def start_sshd(home: Path) -> Sshd:
    """Start `/usr/sbin/sshd -D` on a free 127.0.0.1 port (root login by key only, temp host key)."""
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    host_key, client_key = home / "host_ed25519", home / "client_ed25519"
    for key in (host_key, client_key):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    authorized = home / "authorized_keys"
    authorized.write_text((home / "client_ed25519.pub").read_text())
    authorized.chmod(0o600)
    port = free_port()
    config = home / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\nPidFile {home}/sshd.pid\n"
        f"AuthorizedKeysFile {authorized}\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nMaxSessions 50\nMaxStartups 50\n"
        "LogLevel ERROR\nSubsystem sftp internal-sftp\n"
        # bash, started by sshd, sources ~/.bashrc only in a top-level shell: SHLVL=1 keeps this machine's
        # dotfiles out of the fake host (a pyenv lock left by a killed login stalled every login 60 s in CI)
        "SetEnv SHLVL=1\n"
    )
    known_hosts = home / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {(home / 'host_ed25519.pub').read_text()}")
    ssh_config = home / "ssh_config"
    user = pwd.getpwuid(os.getuid()).pw_name
    ssh_config.write_text(
        f"Host aka-test-host\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n"
        f"  IdentityFile {client_key}\n  UserKnownHostsFile {known_hosts}\n"
    )
    server = Sshd(port, config, client_key, known_hosts, ssh_config, home)
    server.start()
    return server


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A real sshd on 127.0.0.1 for the whole session (tests may kill and restart it on the same port)."""
    if not Path("/usr/sbin/sshd").exists():
        pytest.fail("openssh-server is not installed: apt-get install openssh-server (as .ci/run does)")
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()
