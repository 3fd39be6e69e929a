"""The ledger's PostgreSQL backend (a fleet's shared store), behind `Ledger`'s interface.

The same three tables as the SQLite ledger, prefixed `ledger_` and with a `campaign` column (the campaign
directory), created by the fleet's migrations; the same unique keys, and the same one-statement upserts
(`INSERT ... ON CONFLICT (campaign, key)`), so recording stays idempotent across coordinators too.
"""

from __future__ import annotations

from typing import Any

TABLES = {
    "evaluations": "ledger_evaluations",
    "decisions": "ledger_decisions",
    "agent_runs": "ledger_agent_runs",
}


class PostgresLedgerStore:
    """One campaign's ledger rows in the fleet database (a process-wide connection pool per URL)."""

    def __init__(self, url: str, campaign: str) -> None:
        from aka_graph.fleet.database import migrated_pool

        self.pool = migrated_pool(url)
        self.campaign = campaign

    def upsert(self, table: str, row: dict[str, Any], update_when: str | None) -> int:
        """Insert by (campaign, key); on a conflict update only when `update_when` holds (SQL over the old
        row, named by the SQLite table name, and `excluded`). Returns the row's id."""
        columns = ["campaign", *row]
        values = {**row, "campaign": self.campaign}
        sql = (
            f"insert into {TABLES[table]} as {table} ({', '.join(columns)}) "
            f"values ({', '.join(f'%({c})s' for c in columns)}) on conflict (campaign, key) do "
        )
        if update_when is None:
            sql += "nothing"
        else:
            sets = ", ".join(f"{c} = excluded.{c}" for c in row if c != "key")
            sql += f"update set {sets} where {update_when}"
        with self.pool.connection() as conn, conn.transaction():
            conn.execute(sql, values)
            found = conn.execute(
                f"select id from {TABLES[table]} where campaign = %s and key = %s",
                [self.campaign, row["key"]],
            ).fetchone()
        return int(found["id"])

    def rows(self, table: str, **equal: Any) -> list[dict[str, Any]]:
        """The campaign's rows of `table` in recording order, filtered on the given non-None columns."""
        where = ["campaign = %(campaign)s"] + [f"{c} = %({c})s" for c, v in equal.items() if v is not None]
        with self.pool.connection() as conn:
            return list(
                conn.execute(
                    f"select * from {TABLES[table]} where {' and '.join(where)} order by id",
                    {**equal, "campaign": self.campaign},
                ).fetchall()
            )

    def token_total(self) -> int:
        with self.pool.connection() as conn:
            row = conn.execute(
                "select coalesce(sum(total), 0) as t from ledger_agent_runs where campaign = %s",
                [self.campaign],
            ).fetchone()
        return int(row["t"])
