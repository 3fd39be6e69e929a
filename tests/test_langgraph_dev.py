"""`langgraph dev` serves the campaign graph from langgraph.json: it is listed, and a run completes through
the HTTP API (test doubles come in through AKA_GRAPH_CONTEXT_FACTORY, as a site would plug its own)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
NODES_DIR = Path(__file__).parent / "nodes"
sys.path.insert(0, str(NODES_DIR))
from campaign_fakes import write_fake_operator  # noqa: E402


def langgraph_cli() -> str:
    beside = Path(sys.executable).parent / "langgraph"
    found = str(beside) if beside.is_file() else shutil.which("langgraph")
    if not found:
        pytest.fail("the langgraph CLI is missing: pip install -e '.[dev]' (langgraph-cli[inmem])")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(port: int, path: str, body: dict[str, Any] | None = None, timeout: float = 60) -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        method="POST" if body is not None else "GET",
        data=json.dumps(body).encode() if body is not None else None,
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read() or b"null")


@pytest.mark.slow
def test_langgraph_dev_lists_the_graph_and_runs_a_campaign(tmp_path: Path) -> None:
    op = write_fake_operator(tmp_path / "op")
    port = free_port()
    env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "AKA_GRAPH_CONTEXT_FACTORY": "campaign_fakes:make_context",
        "PYTHONPATH": os.pathsep.join([str(NODES_DIR), os.environ.get("PYTHONPATH", "")]),
    }
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [
            langgraph_cli(),
            "dev",
            "--config",
            str(REPO / "langgraph.json"),
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            "--no-browser",
            "--no-reload",
        ],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                call(port, "/ok", timeout=2)
                break
            except OSError:
                assert server.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "langgraph dev did not come up in 90 s"
                time.sleep(0.5)
        assistants = call(port, "/assistants/search", {})
        assert [a["graph_id"] for a in assistants] == ["aka_graph_campaign"]
        schemas = call(port, f"/assistants/{assistants[0]['assistant_id']}/schemas")  # what Studio draws
        assert "config" in schemas["input_schema"]["properties"]
        assert "incumbent" in schemas["output_schema"]["properties"]
        assert "sandbox" in schemas["context_schema"]["properties"]
        thread = call(port, "/threads", {})
        config = {
            "platform": "cpu",
            "op_dir": str(op),
            "agent_cli": "fake",
            "max_iters": 1,
            "fast_episodes": 1,
            "fast_trials": 2,
            "workspace": str(tmp_path / "ws"),
        }
        output = call(
            port,
            f"/threads/{thread['thread_id']}/runs/wait",
            {"assistant_id": "aka_graph_campaign", "input": {"config": config}},
            timeout=120,
        )
        assert "__error__" not in output, output
        assert output["stop_reason"] == "max-iters"
        assert output["incumbent"]["version"] == 1 and output["last_decision"]["outcome"] == "promoted"
        assert Path(output["workspace_root"], "memory", "v1.json").is_file()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()
