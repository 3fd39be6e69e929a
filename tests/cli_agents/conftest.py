"""Fixtures for running the real coding CLIs offline against `fake_model_server.py`.

The server runs inside its own network namespace holding only loopback (`unshare -n`), and every CLI
is started inside that namespace (`nsenter --net=...`), so nothing can reach the outside even if a
setting were missed. Without the privileges for that, the server runs on the host's 127.0.0.1 and
the reason is logged.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from aka_graph.cli_agents.base import AgentRun
from aka_graph.cli_agents.claude import ClaudeBackend
from aka_graph.cli_agents.cli_backend import CliBackend
from aka_graph.cli_agents.codex import CodexBackend
from aka_graph.cli_agents.locate import PI_MIN_NODE, find_executable, find_node
from aka_graph.cli_agents.pi import PiBackend
from aka_graph.cli_agents.settings import SessionSettings

SERVER = Path(__file__).with_name("fake_model_server.py")
KERNEL = "def run(x):\n    return x + 0  # TODO speed up\n"
FAKE_KEY = "sk-fake-0123456789-never-in-argv"
log = logging.getLogger(__name__)


@dataclass
class FakeServer:
    """The running fake model server: its port, request log and how to enter its network."""

    port: int
    log_path: Path
    wrapper: list[str]
    netns: bool
    reason: str = ""
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def requests(self, run_id: str | None = None) -> list[dict[str, Any]]:
        entries = [json.loads(line) for line in self.log_path.read_text().splitlines() if line.strip()]
        return [e for e in entries if run_id is None or e.get("run") == run_id]


def _netns_usable() -> str | None:
    """None when `unshare -n` + `nsenter` work here, else why not."""
    if os.geteuid() != 0:
        return "not root: cannot create a network namespace"
    for tool in ("unshare", "nsenter", "ip"):
        if shutil.which(tool) is None:
            return f"`{tool}` not found"
    probe = subprocess.run(
        ["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True, text=True, timeout=30
    )
    if probe.returncode != 0:
        return f"unshare -n failed: {probe.stderr.strip()}"
    return None


@pytest.fixture(scope="session")
def fake_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    work = tmp_path_factory.mktemp("fake-model-server")
    log_path, port_file = work / "requests.jsonl", work / "port"
    log_path.touch()
    server = [sys.executable, str(SERVER), "--log", str(log_path), "--port-file", str(port_file)]
    reason = _netns_usable()
    if reason is None:
        argv = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *server]
    else:
        log.warning("running the fake model server WITHOUT a network namespace: %s", reason)
        argv = server
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 20
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"fake model server did not start (exit {proc.poll()})")
        time.sleep(0.05)
    wrapper = ["nsenter", f"--net=/proc/{proc.pid}/ns/net", "--"] if reason is None else []
    yield FakeServer(int(port_file.read_text()), log_path, wrapper, reason is None, reason or "", proc)
    os.killpg(proc.pid, 9)
    proc.wait(timeout=10)


def require_cli(name: str) -> None:
    """Skip (with the reason) only when the CLI binary is absent."""
    names = {"claude": ("claude",), "codex": ("codex",), "pi": ("pi",)}[name]
    if find_executable(name.upper(), names) is None:
        pytest.skip(f"{name} CLI not installed (run `bash scripts/install_agent_clis.sh`)")
    if name == "pi" and find_node(PI_MIN_NODE) is None:
        pytest.skip("pi needs Node >= 22.19 (run `bash scripts/install_agent_clis.sh`)")


def make_cli_backend(name: str, server: FakeServer, home: Path) -> CliBackend:
    """A real backend pointed only at the fake server, with its own private home."""
    base = f"http://127.0.0.1:{server.port}"
    if name == "claude":
        settings = SessionSettings(
            env={"ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": FAKE_KEY, "CLAUDE_CODE_MAX_RETRIES": "0"},
            home=str(home),
            link_user_auth=False,
        )
        return ClaudeBackend(settings, wrapper=server.wrapper)
    if name == "codex":
        provider = {
            "name": "fake",
            "base_url": f"{base}/v1",
            "wire_api": "responses",
            "env_key": "FAKE_MODEL_KEY",
            "request_max_retries": 0,
            "stream_max_retries": 0,
        }
        settings = SessionSettings(
            env={"FAKE_MODEL_KEY": FAKE_KEY},
            home=str(home),
            model="gpt-5.5",
            link_user_auth=False,
            config={"model_provider": "fake", "model_providers.fake": provider},
        )
        return CodexBackend(settings, wrapper=server.wrapper)
    if name == "pi":
        models = {
            "providers": {
                "fake": {
                    "baseUrl": base,
                    "api": "anthropic-messages",
                    "apiKey": "$FAKE_MODEL_KEY",
                    "models": [{"id": "fake-model"}],
                }
            }
        }
        retry = {"retry": {"enabled": True, "maxRetries": 1, "baseDelayMs": 50}}
        settings = SessionSettings(
            env={"FAKE_MODEL_KEY": FAKE_KEY},
            home=str(home),
            provider="fake",
            model="fake-model",
            link_user_auth=False,
            home_files={"models.json": models, "settings.json": retry},
        )
        return PiBackend(settings, wrapper=server.wrapper)
    raise ValueError(name)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kernel.py").write_text(KERNEL)
    return ws


def agent_run(
    ws: Path, task: str, *, timeout_s: float = 60, resume: str | None = None
) -> tuple[AgentRun, str]:
    """An `AgentRun` whose prompt scripts the fake server; returns it and its run id."""
    run_id = uuid.uuid4().hex[:12]
    prompt = f"TASK:{task} RUN:{run_id} FILE:{ws / 'kernel.py'} Make kernel.py faster."
    run = AgentRun(
        role="implementer",
        prompt=prompt,
        cwd=ws,
        timeout_s=timeout_s,
        resume_session=resume,
        transcript_dir=ws.parent / "transcripts",
        effort="medium",
    )
    return run, run_id
