"""Put a SQLite database in WAL mode from several threads or processes at once.

Why a helper: `PRAGMA journal_mode=WAL` needs an exclusive lock and SQLite answers "database is locked"
at once instead of waiting on the connection's busy timeout when another connection holds the file. The
checkpoint database and the ledger are both opened by concurrent campaigns (one thread each), so both
switch the mode here: only when the file is not in WAL mode already, and retried while it is locked.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable


def use_wal(conn: sqlite3.Connection, then: Callable[[], None] | None = None, attempts: int = 50) -> None:
    """Switch `conn`'s database to WAL (a no-op where it is already), then run `then` (schema set-up),
    retrying both on "database is locked"; any other error, or the last attempt's, is raised."""
    for attempt in range(attempts):
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            if then is not None:
                then()
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or attempt == attempts - 1:
                raise
            time.sleep(0.05 + 0.01 * attempt)
