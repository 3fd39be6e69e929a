"""Where the fleet's database is and how this process talks to it: one psycopg connection pool per URL.

The URL comes from `--database-url` or `AKA_DATABASE_URL`. Setting the variable is also what moves a
campaign's ledger to PostgreSQL (`tools/records/ledger.py`), so a coordinator sets it for its own process.
Connections are autocommit (every statement its own transaction unless a `with conn.transaction()` block
groups them) with dict rows; `prepare_threshold=None` keeps them usable behind PgBouncer.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from aka_graph.tools.records.ledger import DATABASE_URL_ENV

CONNECT_KWARGS: dict[str, Any] = {"autocommit": True, "prepare_threshold": None, "row_factory": dict_row}

_POOLS: dict[str, ConnectionPool] = {}
_POOLS_LOCK = threading.Lock()
_MIGRATED: set[str] = set()


class DatabaseNotConfigured(RuntimeError):
    """No database URL: the message names the flag and the variable."""


def database_url(explicit: str | None = None) -> str:
    """The fleet's database URL: the explicit one, else `AKA_DATABASE_URL`; none is an error naming both."""
    url = explicit or os.environ.get(DATABASE_URL_ENV)
    if not url:
        raise DatabaseNotConfigured(
            f"no fleet database: pass --database-url postgresql://... or set {DATABASE_URL_ENV}"
        )
    return url


def pool(url: str, max_size: int = 20) -> ConnectionPool:
    """The process-wide pool for `url` (opened on first use, shared by every thread of this process)."""
    with _POOLS_LOCK:
        found = _POOLS.get(url)
        if found is None or found.closed:
            found = ConnectionPool(
                url, min_size=1, max_size=max_size, kwargs=dict(CONNECT_KWARGS), open=True, timeout=60
            )
            found.wait(timeout=60)
            _POOLS[url] = found
        return found


def migrated_pool(url: str) -> ConnectionPool:
    """`pool(url)` with the schema brought up to date once per process (see `schema.migrate`)."""
    opened = pool(url)
    if url not in _MIGRATED:
        from aka_graph.fleet.schema import migrate

        with opened.connection() as conn:
            migrate(conn)
        _MIGRATED.add(url)
    return opened


def close_pools() -> None:
    """Close every pool this process opened (end of a command, or before a test drops its database)."""
    with _POOLS_LOCK:
        for opened in _POOLS.values():
            opened.close()
        _POOLS.clear()
        _MIGRATED.clear()
