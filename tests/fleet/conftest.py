"""Fleet fixtures: a fresh database per test on the real PostgreSQL `.ci/run` starts, and SSH 'GPU hosts'.

`AKA_TEST_DATABASE_URL` names the server (`bash tests/fleet/start_postgres.sh` prints one); without it
the `postgres` tests skip, saying how to get one. Each test gets its own database, dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg_pool import ConnectionPool

from aka_graph.fleet.database import close_pools

TEST_URL_ENV = "AKA_TEST_DATABASE_URL"


def server_url() -> str:
    url = os.environ.get(TEST_URL_ENV)
    if not url:
        pytest.skip(
            f"no PostgreSQL for the fleet tests: set {TEST_URL_ENV} (`bash tests/fleet/start_postgres.sh` "
            "starts one and prints it; .ci/run does this)"
        )
    return url


def _with_db(url: str, name: str) -> str:
    return psycopg.conninfo.make_conninfo(url, dbname=name)


def create_database(url: str) -> str:
    name = f"aka_fleet_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    return _with_db(url, name)


def drop_database(url: str, db_url: str) -> None:
    close_pools()
    name = psycopg.conninfo.conninfo_to_dict(db_url)["dbname"]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


@pytest.fixture
def database_url() -> Iterator[str]:
    """A fresh, empty database on the test server (dropped after the test)."""
    url = server_url()
    db_url = create_database(url)
    try:
        yield db_url
    finally:
        drop_database(url, db_url)


@pytest.fixture
def pool(database_url: str) -> ConnectionPool:
    from aka_graph.fleet.database import migrated_pool

    return migrated_pool(database_url)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.postgres)
