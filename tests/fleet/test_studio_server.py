"""`langgraph dev --config aka_graph/fleet/langgraph.json` serves the campaign graph with the fleet's
Postgres checkpointer: a campaign thread a coordinator checkpointed is visible through the server's API
(what Studio shows) once a thread with the campaign's id exists there."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from psycopg_pool import ConnectionPool

from aka_graph.fleet.checkpointer import campaign_thread_id, postgres_checkpointer
from aka_graph.graph import build_graph
from aka_graph.state import CampaignConfig, Incumbent
from tests.test_langgraph_dev import call, free_port, langgraph_cli

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_studio_server_shows_a_fleet_campaign(
    pool: ConnectionPool, database_url: str, tmp_path: Path
) -> None:
    compiled = build_graph().compile(checkpointer=postgres_checkpointer(pool))
    thread = campaign_thread_id("rmsnorm-triton")
    cfg = {"configurable": {"thread_id": thread}}
    config = CampaignConfig(op_dir="/ops/rmsnorm", platform="H200", token_budget=10)
    incumbent = Incumbent(version=2, objective=61.5, sha256="a" * 64, kernel_path="/ws/v2")
    compiled.update_state(cfg, {"config": config, "incumbent": incumbent, "episode": 3}, as_node="promote")

    port = free_port()
    env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "AKA_DATABASE_URL": database_url}
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [
            langgraph_cli(),
            "dev",
            "--config",
            str(REPO / "aka_graph" / "fleet" / "langgraph.json"),
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
        deadline = time.monotonic() + 120
        while True:
            try:
                call(port, "/ok", timeout=2)
                break
            except OSError:
                assert server.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "langgraph dev did not come up in 120 s"
                time.sleep(0.5)
        call(
            port,
            "/threads",
            {"thread_id": thread, "if_exists": "do_nothing", "metadata": {"graph_id": "aka_graph_campaign"}},
        )
        state = call(port, f"/threads/{thread}/state")
        assert state["values"]["incumbent"]["version"] == 2 and state["values"]["episode"] == 3
        assert state["values"]["config"]["op_dir"] == "/ops/rmsnorm"
        assert "finish" not in (state.get("next") or [])
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()
