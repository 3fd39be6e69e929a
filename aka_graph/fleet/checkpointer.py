"""LangGraph's Postgres checkpointer for fleet campaigns (graph state in the fleet's database).

The serializer allows exactly the campaign's own state types, like the SQLite checkpointer in
`runner.py`, so a checkpoint written by one coordinator is read back by another as the same objects.
"""

from __future__ import annotations

import uuid

from langgraph.checkpoint.postgres import PostgresSaver
from psycopg import Connection
from psycopg_pool import ConnectionPool

from aka_graph.checkpoint_serde import campaign_serde


def campaign_thread_id(campaign_id: str) -> str:
    """The LangGraph thread of a fleet campaign: a UUID derived from its id (the LangGraph API server and
    Studio address threads by UUID), the same on every coordinator."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"aka_graph-fleet:{campaign_id}"))


def postgres_checkpointer(conn: Connection | ConnectionPool) -> PostgresSaver:
    """A `PostgresSaver` over a connection or (for a coordinator's concurrent campaigns) a pool."""
    return PostgresSaver(conn, serde=campaign_serde())


def setup_checkpoint_tables(conn: Connection) -> None:
    """LangGraph's own checkpoint migrations (idempotent; needs an autocommit connection)."""
    PostgresSaver(conn).setup()
