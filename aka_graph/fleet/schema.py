"""The fleet's schema: an ordered list of SQL migrations, each applied once and recorded in a table.

`migrate()` runs under an advisory lock, so coordinators starting together apply each migration exactly
once; it also sets up LangGraph's checkpoint tables (`PostgresSaver.setup`, which keeps
its own migration table). Never edit a migration that has shipped: append a new one.
"""

from __future__ import annotations

import time

from psycopg import Connection

MIGRATION_LOCK = 0x616B615F666C74  # "aka_flt": any fixed key shared by every coordinator

MIGRATIONS: list[tuple[str, str]] = [
    (
        "campaign registry and leases",
        """
        create table fleet_campaigns (
            id text primary key,
            op_name text not null,
            framework text not null,
            spec jsonb not null,
            state text not null default 'queued'
                check (state in ('queued', 'running', 'finished', 'stopped', 'failed')),
            stop_requested boolean not null default false,
            holder text,
            expires_at timestamptz,
            takeovers integer not null default 0,
            submitted_at timestamptz not null default clock_timestamp(),
            started_at timestamptz,
            finished_at timestamptz,
            updated_at timestamptz,
            node text,
            episode integer,
            incumbent_version integer,
            incumbent_objective double precision,
            baseline_objective double precision,
            tokens_spent bigint not null default 0,
            stop_reason text,
            last_host text,
            message text not null default ''
        );
        create index fleet_campaigns_runnable on fleet_campaigns (submitted_at, id)
            where state in ('queued', 'running');
        """,
    ),
    (
        "ledger (the SQLite ledger's three tables, one row set per campaign)",
        """
        create table ledger_evaluations (
            id bigserial primary key,
            campaign text not null,
            key text not null,
            episode integer,
            trial integer,
            role text not null,
            kernel_sha256 text not null,
            status text not null,
            objective double precision,
            geomean_latency_us double precision,
            geomean_utilization_pct double precision,
            timing_method text,
            authoritative integer,
            kernel_path text,
            result_path text,
            message text,
            recorded_at text,
            unique (campaign, key)
        );
        create table ledger_decisions (
            id bigserial primary key,
            campaign text not null,
            key text not null,
            episode integer,
            kind text not null,
            decision text not null,
            incumbent_sha256 text,
            candidate_sha256 text,
            numbers text,
            message text,
            recorded_at text,
            unique (campaign, key)
        );
        create table ledger_agent_runs (
            id bigserial primary key,
            campaign text not null,
            key text not null,
            episode integer,
            trial integer,
            role text not null,
            attempt integer,
            session_id text,
            input bigint,
            output bigint,
            cache_read bigint,
            cache_write bigint,
            total bigint,
            accuracy text,
            recorded_at text,
            unique (campaign, key)
        );
        """,
    ),
    (
        "GPU hosts, GPU leases and the lease log",
        """
        create table fleet_hosts (
            name text primary key,
            target text not null,
            state text not null default 'up' check (state in ('up', 'drained')),
            diagnostic text not null default '',
            drained_at timestamptz,
            probed_at timestamptz
        );
        create table fleet_gpus (
            host text not null references fleet_hosts (name) on delete cascade,
            gpu integer not null,
            holder text,
            campaign text,
            job text,
            lease_id bigint,
            expires_at timestamptz,
            released_at timestamptz,
            primary key (host, gpu)
        );
        create table fleet_gpu_leases (
            id bigserial primary key,
            host text not null,
            gpu integer not null,
            holder text not null,
            campaign text,
            job text,
            exclusive boolean not null,
            started_at timestamptz not null default clock_timestamp(),
            expires_at timestamptz not null,
            ended_at timestamptz,
            outcome text
        );
        create index fleet_gpu_leases_gpu on fleet_gpu_leases (host, gpu, started_at);
        create table fleet_host_events (
            id bigserial primary key,
            host text not null,
            event text not null,
            diagnostic text not null default '',
            at timestamptz not null default clock_timestamp()
        );
        """,
    ),
    (
        "campaign failures: a crashed attempt is retried from its checkpoint before the campaign fails",
        "alter table fleet_campaigns add column failures integer not null default 0;",
    ),
]


def migrate(conn: Connection) -> list[str]:
    """Apply every migration not yet recorded, then LangGraph's checkpoint setup; returns what it applied.

    `conn` must be autocommit: the checkpoint setup creates indexes CONCURRENTLY (outside a transaction),
    so the lock that serialises coordinators is a session advisory lock, released at the end.
    """
    from aka_graph.fleet.checkpointer import setup_checkpoint_tables

    applied: list[str] = []
    _lock(conn)
    try:
        conn.execute(
            "create table if not exists fleet_schema_migrations ("
            " version integer primary key, name text not null,"
            " applied_at timestamptz not null default clock_timestamp())"
        )
        done = {r["version"] for r in conn.execute("select version from fleet_schema_migrations").fetchall()}
        for version, (name, sql) in enumerate(MIGRATIONS, start=1):
            if version in done:
                continue
            with conn.transaction():
                conn.execute(sql)
                conn.execute(
                    "insert into fleet_schema_migrations (version, name) values (%s, %s)", [version, name]
                )
            applied.append(name)
        setup_checkpoint_tables(conn)
    finally:
        conn.execute("select pg_advisory_unlock(%s)", [MIGRATION_LOCK])
    return applied


def _lock(conn: Connection, poll_s: float = 0.05) -> None:
    """Take the migration lock by polling `pg_try_advisory_lock`: a waiter blocked inside
    `pg_advisory_lock` is an open transaction, which the holder's CREATE INDEX CONCURRENTLY would wait
    for — a deadlock. Each try is a transaction that ends at once."""
    while not conn.execute("select pg_try_advisory_lock(%s) as ok", [MIGRATION_LOCK]).fetchone()["ok"]:
        time.sleep(poll_s)


def schema_version(conn: Connection) -> int:
    row = conn.execute("select coalesce(max(version), 0) as v from fleet_schema_migrations").fetchone()
    return int(row["v"])
