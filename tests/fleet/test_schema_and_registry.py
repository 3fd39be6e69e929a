"""The fleet schema's migrations and the campaign leases, against a real PostgreSQL."""

from __future__ import annotations

import threading

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from aka_graph.fleet.registry import Registry
from aka_graph.fleet.schema import MIGRATIONS, migrate, schema_version

SPEC = {"op_dir": "/ops/x", "framework": "triton", "token_budget": 1000}


def _expire(pool: ConnectionPool, campaign: str) -> None:
    """The clock moves past the lease's expiry (as when its holder stops renewing)."""
    with pool.connection() as conn:
        conn.execute(
            "update fleet_campaigns set expires_at = clock_timestamp() - interval '1 second' where id = %s",
            [campaign],
        )


def test_migrations_apply_once_even_when_coordinators_start_together(database_url: str) -> None:
    applied: list[list[str]] = []

    def start() -> None:
        with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn:
            applied.append(migrate(conn))

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(len(a) for a in applied) == [0, 0, 0, len(MIGRATIONS)]
    with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn:
        assert schema_version(conn) == len(MIGRATIONS)
        assert migrate(conn) == []
        tables = {r["tablename"] for r in conn.execute("select tablename from pg_tables").fetchall()}
    assert {"fleet_campaigns", "ledger_evaluations", "fleet_gpu_leases", "checkpoints"} <= tables


def test_two_coordinators_never_hold_the_same_campaign(pool: ConnectionPool) -> None:
    registry = Registry(pool)
    for i in range(30):
        assert registry.submit(f"c{i:02d}", "op", "triton", SPEC)
    assert not registry.submit("c00", "op", "triton", SPEC)  # submitting twice is harmless
    taken: dict[str, list[str]] = {"a": [], "b": [], "c": []}
    barrier = threading.Barrier(3)

    def coordinator(name: str) -> None:
        barrier.wait()
        while (lease := registry.take(name, 60)) is not None:
            taken[name].append(lease.campaign_id)

    threads = [threading.Thread(target=coordinator, args=(n,)) for n in taken]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [c for ids in taken.values() for c in ids]
    assert sorted(every) == [f"c{i:02d}" for i in range(30)]  # each exactly once
    rows = {r.id: r for r in registry.rows()}
    assert all(rows[c].holder == name for name, ids in taken.items() for c in ids)


def test_an_expired_lease_is_taken_over_and_its_old_holder_learns_it_lost_it(pool: ConnectionPool) -> None:
    registry = Registry(pool)
    registry.submit("c1", "op", "triton", SPEC)
    first = registry.take("dead", 60)
    assert first is not None and not first.takeover
    assert registry.take("alive", 60) is None  # held, not expired: nobody else may run it
    _expire(pool, "c1")
    second = registry.take("alive", 60)
    assert second is not None and second.campaign_id == "c1" and second.takeover
    assert registry.renew("dead", 60) == set()  # the old holder's heartbeat sees the loss
    assert registry.progress("c1", "dead", node="x") is None  # and may no longer write progress
    assert registry.progress("c1", "alive", node="abba", tokens_spent=10) is False
    assert registry.rows()[0].takeovers == 1


def test_stop_and_resume(pool: ConnectionPool) -> None:
    registry = Registry(pool)
    for cid in ("queued", "running", "orphan"):
        registry.submit(cid, "op", "triton", SPEC)
    registry.take("coord", 60)  # "queued" is the oldest... take the first two
    registry.take("dead", 60)
    _expire(pool, "running")  # ids sort: 'queued' taken by coord, 'running' by dead (expired)
    stopped = registry.request_stop(None)
    assert stopped == ["orphan", "queued", "running"]
    states = {r.id: r.state for r in registry.rows()}
    assert states == {"orphan": "stopped", "queued": "running", "running": "stopped"}
    assert registry.progress("queued", "coord", node="n") is True  # the holder sees the request
    assert registry.end("queued", "coord", "stopped", "stop requested")
    assert registry.take("coord", 60) is None  # nothing runnable while stopped
    assert registry.requeue(["orphan"]) == ["orphan"]
    lease = registry.take("coord", 60)
    assert lease is not None and lease.campaign_id == "orphan"


def test_a_crashed_attempt_is_retried_then_the_campaign_fails(pool: ConnectionPool) -> None:
    registry = Registry(pool)
    registry.submit("c1", "op", "triton", SPEC)
    for attempt in (1, 2):
        assert registry.take("coord", 60) is not None
        assert registry.fail("c1", "coord", f"SystemError: attempt {attempt}", max_failures=3) == "queued"
    assert registry.take("other", 60) is not None
    assert registry.fail("c1", "coord", "late report from a coordinator that lost it", 3) is None
    assert registry.fail("c1", "other", "SystemError: attempt 3", max_failures=3) == "failed"
    (row,) = registry.rows()
    assert (row.state, row.message) == ("failed", "SystemError: attempt 3")
    assert registry.take("coord", 60) is None and registry.requeue(["c1"]) == ["c1"]
