"""Real sshd instances on 127.0.0.1 posing as GPU hosts, and the hosts file that names them."""

from __future__ import annotations

import json
import os
import pwd
import sys
from dataclasses import dataclass
from pathlib import Path

import aka_graph.tools.evaluator.health as health_module
from tests.tools.evaluator.sandbox.conftest import Sshd, python_runtime_binds, start_sshd

QUICK_PREFLIGHT = f"{sys.executable} -c 'import json'"


@dataclass
class FakeGpuHosts:
    servers: dict[str, Sshd]
    hosts_file: Path

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()


# a health probe without torch (the real probe imports torch: ~2 s of CPU per probe on this machine)
LIGHT_PROBE = ["sh", "-c", 'echo \'{"healthy": true, "device": {"name": "cpu"}}\'']


def start_hosts(
    root: Path,
    names: list[str],
    fake_nvidia_smi: Path,
    gpus: list[int] | None = None,
    light_probe: bool = False,
) -> FakeGpuHosts:
    """One sshd per name, one OpenSSH client config with an alias per host, and a TOML hosts file (the
    real health probe in its CPU mode, or with `light_probe` one that only proves the host runs jobs)."""
    user = pwd.getpwuid(os.getuid()).pw_name
    servers, config = {}, []
    for name in names:
        home = root / name
        home.mkdir(parents=True)
        server = start_sshd(home)
        servers[name] = server
        config.append(
            f"Host {name}\n  HostName 127.0.0.1\n  Port {server.port}\n  User {user}\n"
            f"  IdentityFile {server.client_key}\n  UserKnownHostsFile {server.known_hosts}\n"
        )
        (home / "tmp").mkdir()
    ssh_config = root / "ssh_config"
    ssh_config.write_text("\n".join(config))
    probe = (
        LIGHT_PROBE
        if light_probe
        else [sys.executable, "-c", Path(health_module.__file__).read_text(), "--cpu"]
    )
    lines = [
        "[defaults]",
        f"ssh_config = {json.dumps(str(ssh_config))}",
        f"nvidia_smi = {json.dumps(str(fake_nvidia_smi))}",
        f"preflight_command = {json.dumps(QUICK_PREFLIGHT)}",
        f"runtime_binds = {json.dumps(python_runtime_binds())}",
        f"health_command = {json.dumps(probe)}",
        f"cleanup_queue = {json.dumps(str(root / 'cleanup.json'))}",
        "connect_timeout_s = 5",
        "health_timeout_s = 60",
    ]
    for name in names:
        lines += [
            "",
            "[[host]]",
            f'name = "{name}"',
            f'target = "{name}"',
            f"gpus = {json.dumps(gpus or [0])}",
            f"remote_tmp = {json.dumps(str(root / name / 'tmp'))}",
        ]
    hosts_file = root / "hosts.toml"
    hosts_file.write_text("\n".join(lines) + "\n")
    return FakeGpuHosts(servers, hosts_file)


def write_fake_nvidia_smi(directory: Path) -> Path:
    """`nvidia-smi --query-gpu=index,uuid,pci.bus_id` of a 2-GPU host (same as the sandbox tests')."""
    from tests.tools.evaluator.sandbox.conftest import FAKE_GPUS

    script = directory / "nvidia-smi"
    lines = "\n".join(f"{i}, {uuid}, 00000000:{0x19 + i:02X}:00.0" for i, uuid in FAKE_GPUS.items())
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{lines}\nEOF\n")
    script.chmod(0o755)
    return script
