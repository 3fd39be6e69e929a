"""`use_wal`: concurrent campaigns open one checkpoint database; switching it to WAL must wait out a
connection that holds the file instead of failing with "database is locked" (the clean-clone CI flake of
round 26, in `open_checkpointer`)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from aka_graph.tools.records.sqlite_wal import use_wal


def _held_for(path: Path, seconds: float) -> threading.Event:
    """Another connection holds a read lock on `path` for `seconds`; the event is set once it holds it."""
    holding = threading.Event()

    def hold() -> None:
        other = sqlite3.connect(path)
        other.execute("BEGIN")
        other.execute("SELECT count(*) FROM t").fetchone()
        holding.set()
        threading.Event().wait(seconds)
        other.rollback()
        other.close()

    threading.Thread(target=hold, daemon=True).start()
    assert holding.wait(5)
    return holding


def _fresh(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()


def test_switching_to_wal_waits_for_a_connection_that_holds_the_file(tmp_path):
    path = tmp_path / "db.sqlite"
    _fresh(path)
    _held_for(path, 0.5)
    conn = sqlite3.connect(path, timeout=0.01)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        conn.execute("PRAGMA journal_mode=WAL")  # the bare pragma fails at once: what use_wal is for
    use_wal(conn)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_database_already_in_wal_is_left_alone_while_another_connection_reads(tmp_path):
    path = tmp_path / "db.sqlite"
    _fresh(path)
    use_wal(sqlite3.connect(path))
    _held_for(path, 0.3)
    ran = []
    use_wal(sqlite3.connect(path, timeout=0.01), then=lambda: ran.append(True), attempts=1)
    assert ran == [True]


def test_errors_other_than_a_lock_are_raised_at_once(tmp_path):
    conn = sqlite3.connect(tmp_path / "db.sqlite")
    calls = []

    def broken() -> None:
        calls.append(1)
        raise sqlite3.OperationalError("no such table: nowhere")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        use_wal(conn, then=broken)
    assert calls == [1]
