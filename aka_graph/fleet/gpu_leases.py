"""GPU hosts and GPU leases in the fleet database: every job runs on one leased GPU.

A lease is a row of `fleet_gpus` claimed in one statement (`FOR UPDATE SKIP LOCKED`, only GPUs of hosts
that are `up`, only when free or when the holder's lease expired) plus a row of the lease log
`fleet_gpu_leases` (who, which job, from when to when, and how it ended), written in the same
transaction. So no two coordinators ever put two jobs on one GPU, and the log lets anyone check it. A
coordinator renews its leases while a job runs; one killed with `kill -9` loses them after the expiry
(its log rows then end at their expiry). A host whose job failed for environmental reasons is drained
(no new leases) until a health probe passes again, when it rejoins.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from psycopg import Connection
from psycopg_pool import ConnectionPool


@dataclass(frozen=True)
class GpuLease:
    host: str
    gpu: int
    lease_id: int
    holder: str


@dataclass(frozen=True)
class HostRow:
    name: str
    target: str
    state: str
    diagnostic: str
    gpus: int
    busy: int


class GpuLeases:
    """Hosts, GPUs and their leases (see module docstring)."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    # -- the pool's membership ----------------------------------------------------------------------

    def register_hosts(self, hosts: Iterable[tuple[str, str, list[int]]]) -> None:
        """Make the database know these (name, ssh target, GPU indices); existing state is kept."""
        with self.pool.connection() as conn, conn.transaction():
            for name, target, gpus in hosts:
                conn.execute(
                    "insert into fleet_hosts (name, target) values (%s, %s) "
                    "on conflict (name) do update set target = excluded.target",
                    [name, target],
                )
                for gpu in gpus:
                    conn.execute(
                        "insert into fleet_gpus (host, gpu) values (%s, %s) on conflict do nothing",
                        [name, gpu],
                    )

    def drain(self, host: str, diagnostic: str) -> bool:
        """Take `host` out of the pool (no new leases) until a probe passes; True if it was up."""
        with self.pool.connection() as conn, conn.transaction():
            row = conn.execute(
                "update fleet_hosts set state = 'drained', diagnostic = %s, drained_at = clock_timestamp(), "
                "probed_at = clock_timestamp() where name = %s and state = 'up' returning name",
                [diagnostic[:2000], host],
            ).fetchone()
            if row is not None:
                _event(conn, host, "drained", diagnostic)
        return row is not None

    def rejoin(self, host: str, diagnostic: str = "") -> bool:
        with self.pool.connection() as conn, conn.transaction():
            row = conn.execute(
                "update fleet_hosts set state = 'up', diagnostic = '' where name = %s and state = 'drained' "
                "returning name",
                [host],
            ).fetchone()
            if row is not None:
                _event(conn, host, "rejoined", diagnostic)
        return row is not None

    def claim_probe(self, interval_s: float) -> list[str]:
        """Drained hosts whose next health probe is due, claimed so one coordinator probes each."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "update fleet_hosts set probed_at = clock_timestamp() where state = 'drained' "
                "and (probed_at is null or probed_at < clock_timestamp() - make_interval(secs => %s)) "
                "returning name",
                [interval_s],
            ).fetchall()
        return sorted(r["name"] for r in rows)

    def record_event(self, host: str, event: str, diagnostic: str = "") -> None:
        with self.pool.connection() as conn:
            _event(conn, host, event, diagnostic)

    def up_hosts(self) -> list[str]:
        with self.pool.connection() as conn:
            rows = conn.execute("select name from fleet_hosts where state = 'up' order by name").fetchall()
        return [r["name"] for r in rows]

    def hosts(self) -> list[HostRow]:
        with self.pool.connection() as conn:
            rows = conn.execute(
                "select h.name, h.target, h.state, h.diagnostic, count(g.gpu) as gpus, "
                "count(g.gpu) filter (where g.holder is not null and g.expires_at >= clock_timestamp()) "
                "as busy from fleet_hosts h left join fleet_gpus g on g.host = h.name "
                "group by h.name order by h.name"
            ).fetchall()
        return [HostRow(**r) for r in rows]

    # -- leases -------------------------------------------------------------------------------------

    def acquire(
        self, holder: str, campaign: str, job: str, *, exclusive: bool, ttl_s: float
    ) -> GpuLease | None:
        """Lease one free GPU of an `up` host (the least recently used), or None if none is free now."""
        with self.pool.connection() as conn, conn.transaction():
            row = conn.execute(
                """
                select g.host, g.gpu, g.lease_id as previous from fleet_gpus g
                join fleet_hosts h on h.name = g.host
                where h.state = 'up' and (g.holder is null or g.expires_at < clock_timestamp())
                order by g.released_at nulls first, g.host, g.gpu
                limit 1
                for update of g skip locked
                """
            ).fetchone()
            if row is None:
                return None
            if row["previous"] is not None:  # a holder that stopped renewing: its job ended at the expiry
                conn.execute(
                    "update fleet_gpu_leases set ended_at = expires_at, outcome = 'expired' "
                    "where id = %s and ended_at is null",
                    [row["previous"]],
                )
            lease = conn.execute(
                "insert into fleet_gpu_leases (host, gpu, holder, campaign, job, exclusive, expires_at) "
                "values (%s, %s, %s, %s, %s, %s, clock_timestamp() + make_interval(secs => %s)) "
                "returning id, expires_at",
                [row["host"], row["gpu"], holder, campaign, job, exclusive, ttl_s],
            ).fetchone()
            conn.execute(
                "update fleet_gpus set holder = %s, campaign = %s, job = %s, lease_id = %s, expires_at = %s "
                "where host = %s and gpu = %s",
                [holder, campaign, job, lease["id"], lease["expires_at"], row["host"], row["gpu"]],
            )
        return GpuLease(row["host"], row["gpu"], lease["id"], holder)

    def release(self, lease: GpuLease, outcome: str) -> None:
        """End the lease (only if it is still ours) and close its log row."""
        with self.pool.connection() as conn, conn.transaction():
            conn.execute(
                "update fleet_gpu_leases set ended_at = clock_timestamp(), outcome = %s "
                "where id = %s and ended_at is null",
                [outcome, lease.lease_id],
            )
            conn.execute(
                "update fleet_gpus set holder = null, campaign = null, job = null, lease_id = null, "
                "expires_at = null, released_at = clock_timestamp() "
                "where host = %s and gpu = %s and lease_id = %s",
                [lease.host, lease.gpu, lease.lease_id],
            )

    def renew_lease(self, lease: GpuLease, ttl_s: float) -> bool:
        """Extend one lease (and its log row); False if it is no longer ours."""
        with self.pool.connection() as conn, conn.transaction():
            row = conn.execute(
                "update fleet_gpus set expires_at = clock_timestamp() + make_interval(secs => %s) "
                "where host = %s and gpu = %s and lease_id = %s returning expires_at",
                [ttl_s, lease.host, lease.gpu, lease.lease_id],
            ).fetchone()
            if row is not None:
                conn.execute(
                    "update fleet_gpu_leases set expires_at = %s where id = %s and ended_at is null",
                    [row["expires_at"], lease.lease_id],
                )
        return row is not None

    def renew(self, holder: str, ttl_s: float) -> int:
        """Extend every GPU lease `holder` has (and its log rows); returns how many it still holds."""
        with self.pool.connection() as conn, conn.transaction():
            rows = conn.execute(
                "update fleet_gpus set expires_at = clock_timestamp() + make_interval(secs => %s) "
                "where holder = %s returning lease_id, expires_at",
                [ttl_s, holder],
            ).fetchall()
            for row in rows:
                conn.execute(
                    "update fleet_gpu_leases set expires_at = %s where id = %s and ended_at is null",
                    [row["expires_at"], row["lease_id"]],
                )
        return len(rows)


def _event(conn: Connection, host: str, event: str, diagnostic: str) -> None:
    conn.execute(
        "insert into fleet_host_events (host, event, diagnostic) values (%s, %s, %s)",
        [host, event, diagnostic[:2000]],
    )


def overlapping_leases(pool: ConnectionPool) -> list[tuple[int, int]]:
    """Pairs of lease-log rows that held the same GPU at the same time (an unfinished row counts until its
    expiry). Must always be empty; the fleet tests and `fleet status --check` assert it."""
    with pool.connection() as conn:
        rows = conn.execute(
            """
            select a.id as a, b.id as b from fleet_gpu_leases a
            join fleet_gpu_leases b on a.host = b.host and a.gpu = b.gpu and a.id < b.id
            where tstzrange(a.started_at, coalesce(a.ended_at, a.expires_at))
               && tstzrange(b.started_at, coalesce(b.ended_at, b.expires_at))
            """
        ).fetchall()
    return [(r["a"], r["b"]) for r in rows]
