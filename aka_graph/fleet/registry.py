"""The campaign registry and campaign leases.

A coordinator runs a campaign only while it holds the campaign's lease: `take()` claims one runnable
campaign in one statement (`FOR UPDATE SKIP LOCKED` picks a row no other transaction is claiming, and the
`expires_at < now` guard lets it take over only a lease its holder stopped renewing), `renew()` extends
every lease the coordinator holds and says which ones it lost, and `finish()`/`release()` end them. So two
coordinators never run the same campaign at once, and a coordinator killed with `kill -9` loses its
campaigns after one lease period; the next `take()` resumes them from their checkpoints.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg_pool import ConnectionPool

RUNNABLE = ("queued", "running")


@dataclass(frozen=True)
class CampaignLease:
    campaign_id: str
    spec: dict[str, Any]
    takeover: bool  # another coordinator held it before (its lease had expired)


@dataclass(frozen=True)
class CampaignRow:
    """One line of `fleet status`."""

    id: str
    op_name: str
    framework: str
    state: str
    stop_requested: bool
    holder: str | None
    expires_at: datetime | None
    node: str | None
    episode: int | None
    incumbent_version: int | None
    incumbent_objective: float | None
    baseline_objective: float | None
    tokens_spent: int
    token_budget: int | None
    stop_reason: str | None
    last_host: str | None
    takeovers: int
    message: str

    @property
    def speedup(self) -> float | None:
        """Baseline (V0) objective over the incumbent's: how much faster the campaign made the operator."""
        if not self.baseline_objective or not self.incumbent_objective:
            return None
        return self.baseline_objective / self.incumbent_objective


class Registry:
    """Campaign rows and their leases in the fleet database (`schema.py`)."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    # -- submit / stop ------------------------------------------------------------------------------

    def submit(self, campaign_id: str, op_name: str, framework: str, spec: dict[str, Any]) -> bool:
        """Add a queued campaign; False if the id exists already (submitting a file twice is harmless)."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "insert into fleet_campaigns (id, op_name, framework, spec) values (%s, %s, %s, %s) "
                "on conflict (id) do nothing returning id",
                [campaign_id, op_name, framework, json.dumps(spec, sort_keys=True)],
            ).fetchone()
        return row is not None

    def request_stop(self, ids: list[str] | None) -> list[str]:
        """Stop these campaigns (None: every unfinished one). A queued one stops now; a running one at
        its coordinator's next step (the interrupted node re-runs on resume, as after a crash)."""
        where, args = ("id = any(%s)", [ids]) if ids is not None else ("true", [])
        with self.pool.connection() as conn, conn.transaction():
            conn.execute(
                f"update fleet_campaigns set state = 'stopped', updated_at = clock_timestamp(), "
                f"message = 'stopped before it started' where state = 'queued' and {where}",
                args,
            )
            conn.execute(  # held by a coordinator that died: nobody will see the request
                "update fleet_campaigns set state = 'stopped', holder = null, "
                "updated_at = clock_timestamp(), "
                f"message = 'stopped (its coordinator was gone)' where state = 'running' "
                f"and expires_at < clock_timestamp() and {where}",
                args,
            )
            rows = conn.execute(
                f"update fleet_campaigns set stop_requested = true where state in ('queued', 'running', "
                f"'stopped') and {where} returning id",
                args,
            ).fetchall()
        return sorted(r["id"] for r in rows)

    def requeue(self, ids: list[str] | None) -> list[str]:
        """Make stopped or failed campaigns runnable again (they resume from their checkpoints)."""
        where, args = ("id = any(%s)", [ids]) if ids is not None else ("true", [])
        with self.pool.connection() as conn:
            rows = conn.execute(
                "update fleet_campaigns set state = 'queued', stop_requested = false, holder = null, "
                "failures = 0, expires_at = null, updated_at = clock_timestamp() "
                f"where state in ('stopped', 'failed') and {where} returning id",
                args,
            ).fetchall()
        return sorted(r["id"] for r in rows)

    # -- leases -------------------------------------------------------------------------------------

    def take(self, holder: str, ttl_s: float) -> CampaignLease | None:
        """Claim the oldest runnable campaign nobody holds (or whose holder's lease expired)."""
        with self.pool.connection() as conn:
            row = conn.execute(
                """
                with pick as (
                    select id, holder from fleet_campaigns
                    where state in ('queued', 'running') and not stop_requested
                      and (holder is null or expires_at < clock_timestamp())
                    order by submitted_at, id
                    limit 1
                    for update skip locked
                )
                update fleet_campaigns c
                set holder = %(holder)s, state = 'running',
                    expires_at = clock_timestamp() + make_interval(secs => %(ttl)s),
                    started_at = coalesce(c.started_at, clock_timestamp()),
                    takeovers = c.takeovers + (pick.holder is not null)::int,
                    updated_at = clock_timestamp()
                from pick where c.id = pick.id
                returning c.id, c.spec, pick.holder as previous
                """,
                {"holder": holder, "ttl": ttl_s},
            ).fetchone()
        if row is None:
            return None
        return CampaignLease(row["id"], row["spec"], takeover=row["previous"] is not None)

    def renew(self, holder: str, ttl_s: float) -> set[str]:
        """Extend every campaign lease `holder` still has; returns their ids (missing ones were lost)."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "update fleet_campaigns set expires_at = clock_timestamp() + make_interval(secs => %s) "
                "where holder = %s and state = 'running' returning id",
                [ttl_s, holder],
            ).fetchall()
        return {r["id"] for r in rows}

    def stop_requested(self, campaign_id: str) -> bool:
        with self.pool.connection() as conn:
            row = conn.execute(
                "select stop_requested from fleet_campaigns where id = %s", [campaign_id]
            ).fetchone()
        return bool(row and row["stop_requested"])

    def progress(self, campaign_id: str, holder: str, **fields: Any) -> bool | None:
        """Record where the campaign is (node, episode, incumbent, tokens...) if `holder` still holds it;
        returns whether a stop was requested. None means the lease is gone: the caller must stop working
        on the campaign at once."""
        sets = ", ".join(f"{name} = %({name})s" for name in fields)
        if "baseline_objective" in fields:  # the V0 objective is written once
            sets = sets.replace(
                "baseline_objective = %(baseline_objective)s",
                "baseline_objective = coalesce(baseline_objective, %(baseline_objective)s)",
            )
        with self.pool.connection() as conn:
            row = conn.execute(
                f"update fleet_campaigns set {sets}{', ' if sets else ''}updated_at = clock_timestamp() "
                "where id = %(id)s and holder = %(holder)s and state = 'running' returning stop_requested",
                {**fields, "id": campaign_id, "holder": holder},
            ).fetchone()
        return None if row is None else bool(row["stop_requested"])

    def end(self, campaign_id: str, holder: str, state: str, message: str = "", **fields: Any) -> bool:
        """End `holder`'s lease with a final state: finished, stopped or failed (or running: let go)."""
        sets = "".join(f", {name} = %({name})s" for name in fields)
        with self.pool.connection() as conn:
            row = conn.execute(
                "update fleet_campaigns set state = %(state)s, holder = null, expires_at = null, "
                "message = %(message)s, updated_at = clock_timestamp(), "
                "finished_at = case when %(state)s = 'finished' then clock_timestamp() else finished_at end"
                f"{sets} where id = %(id)s and holder = %(holder)s returning id",
                {**fields, "state": state, "message": message, "id": campaign_id, "holder": holder},
            ).fetchone()
        return row is not None

    def fail(self, campaign_id: str, holder: str, message: str, max_failures: int) -> str | None:
        """An attempt raised: queue the campaign again (it resumes from its checkpoint, the failed node
        re-runs) until it has failed `max_failures` times, then mark it failed. Returns the new state."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "update fleet_campaigns set failures = failures + 1, holder = null, expires_at = null, "
                "state = case when failures + 1 >= %(max)s then 'failed' else 'queued' end, "
                "message = %(message)s, updated_at = clock_timestamp() "
                "where id = %(id)s and holder = %(holder)s returning state",
                {"max": max_failures, "message": message, "id": campaign_id, "holder": holder},
            ).fetchone()
        return row["state"] if row else None

    # -- reading ------------------------------------------------------------------------------------

    def unfinished(self) -> int:
        """How many campaigns may still need a coordinator (queued or running, not being stopped)."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "select count(*) as n from fleet_campaigns where state in ('queued', 'running') "
                "and not stop_requested"
            ).fetchone()
        return int(row["n"])

    def rows(self, ids: list[str] | None = None) -> list[CampaignRow]:
        where, args = ("where id = any(%s)", [ids]) if ids else ("", [])
        with self.pool.connection() as conn:
            found = conn.execute(
                "select id, op_name, framework, state, stop_requested, holder, expires_at, node, episode, "
                "incumbent_version, incumbent_objective, baseline_objective, tokens_spent, "
                "(spec->>'token_budget')::bigint as token_budget, stop_reason, last_host, takeovers, message "
                f"from fleet_campaigns {where} order by op_name, framework, id",
                args,
            ).fetchall()
        return [CampaignRow(**r) for r in found]

    def spec(self, campaign_id: str) -> dict[str, Any] | None:
        with self.pool.connection() as conn:
            row = conn.execute("select spec from fleet_campaigns where id = %s", [campaign_id]).fetchone()
        return row["spec"] if row else None
