"""The LangGraph API server's checkpointer for a fleet: the campaign graph served with graph state read
from (and written to) the fleet's PostgreSQL, so LangGraph Studio can watch any campaign of the fleet.

`aka_graph/fleet/langgraph.json` names `checkpointer` below (langgraph.json's `checkpointer.path`); the
server reads `AKA_DATABASE_URL`. A fleet campaign's thread id is `campaign_thread_id(campaign id)` (a UUID;
`fleet report` lists them); create the thread on the server under that id once
(`POST /threads {"thread_id": ID, "metadata": {"graph_id": "aka_graph_campaign"}}`) and Studio shows
the coordinator's checkpoints as its state and history.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg_pool import AsyncConnectionPool

from aka_graph.checkpoint_serde import campaign_serde
from aka_graph.fleet.database import CONNECT_KWARGS, database_url


@asynccontextmanager
async def checkpointer() -> AsyncIterator[AsyncPostgresSaver]:
    """An `AsyncPostgresSaver` on the fleet database for the server's lifetime (tables made by the fleet's
    migrations: run any `fleet` command once first)."""
    async with AsyncConnectionPool(database_url(), kwargs=dict(CONNECT_KWARGS), open=False) as pool:
        yield AsyncPostgresSaver(pool, serde=campaign_serde())
