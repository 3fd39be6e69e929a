"""The LangGraph server's checkpointer (`aka_graph/fleet/server.py`) reads what a coordinator writes: the
campaign graph's checkpoints in the fleet database, with the campaign's own state types intact."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from psycopg_pool import ConnectionPool

from aka_graph.fleet.checkpointer import campaign_thread_id, postgres_checkpointer
from aka_graph.graph import build_graph
from aka_graph.state import CampaignConfig, Incumbent
from aka_graph.tools.records.ledger import DATABASE_URL_ENV

REPO = Path(__file__).resolve().parents[2]


def test_the_server_sees_a_coordinator_checkpoint(
    pool: ConnectionPool, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled = build_graph().compile(checkpointer=postgres_checkpointer(pool))
    thread = campaign_thread_id("rmsnorm-triton")
    cfg = {"configurable": {"thread_id": thread}}
    config = CampaignConfig(op_dir="/ops/rmsnorm", platform="H200", token_budget=10)
    incumbent = Incumbent(version=2, objective=61.5, sha256="a" * 64, kernel_path="/ws/v2")
    compiled.update_state(cfg, {"config": config, "incumbent": incumbent, "episode": 3}, as_node="promote")

    monkeypatch.setenv(DATABASE_URL_ENV, database_url)
    from aka_graph.fleet.server import checkpointer

    async def read() -> dict:
        async with checkpointer() as saver:
            served = build_graph().compile(checkpointer=saver)
            return (await served.aget_state(cfg)).values

    values = asyncio.run(read())
    assert values["config"] == config and values["incumbent"] == incumbent and values["episode"] == 3


def test_the_fleet_langgraph_config_names_the_graph_and_the_checkpointer() -> None:
    config = json.loads((REPO / "aka_graph" / "fleet" / "langgraph.json").read_text())
    assert config["graphs"] == json.loads((REPO / "langgraph.json").read_text())["graphs"]
    module, _, name = config["checkpointer"]["path"].rpartition(".")
    import importlib

    assert callable(getattr(importlib.import_module(module), name))
    assert (REPO / "aka_graph" / "fleet" / config["dependencies"][0] / "pyproject.toml").is_file()
