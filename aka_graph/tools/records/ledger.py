"""The campaign ledger: every evaluation and every verify/promote decision, in SQLite (sqlite-utils).

The campaign, not the agent, picks the best trial: it reads this ledger, keyed by the sha256 of what the
harness evaluated. Recording is idempotent on (episode, trial, role, kernel sha256), so a node re-run
after a crash never counts a trial twice.

In a fleet (`AKA_DATABASE_URL` set, or `database_url=` given) the same ledger lives in PostgreSQL instead
(`ledger_postgres.py`: the same three tables with a campaign column, the same keys and upserts), so any
coordinator reads and writes it; the SQLite file is then not used.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlite_utils
from pydantic import BaseModel

from aka_graph.tools.evaluator.evaluation_result import EvaluationResult
from aka_graph.tools.records.sqlite_wal import use_wal

EVALUATIONS = "evaluations"
DECISIONS = "decisions"
AGENT_RUNS = "agent_runs"


class LedgerEntry(BaseModel):
    id: int
    episode: int | None
    trial: int | None
    role: str
    kernel_sha256: str
    status: str
    objective: float | None
    geomean_latency_us: float | None
    geomean_utilization_pct: float | None
    timing_method: str
    authoritative: bool
    kernel_path: str
    result_path: str
    message: str
    recorded_at: str


class DecisionEntry(BaseModel):
    id: int
    episode: int | None
    kind: str
    decision: str
    incumbent_sha256: str | None
    candidate_sha256: str | None
    numbers: dict[str, Any]
    message: str
    recorded_at: str


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _key(*parts: object) -> str:
    return "|".join("-" if p is None else str(p) for p in parts)


def kernel_file_sha256(kernel_path: Path) -> str:
    """sha256 of a kernel file, or of `kernel.py` in a kernel directory ("" if neither exists)."""
    path = Path(kernel_path)
    if path.is_dir():
        path = path / "kernel.py"
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


DATABASE_URL_ENV = "AKA_DATABASE_URL"  # the fleet's database (aka_graph/fleet/database.py)


def campaign_key(db_path: Path) -> str:
    """The campaign a ledger file belongs to: its campaign directory (`<root>/records/ledger.sqlite`)."""
    return str(Path(db_path).resolve().parent.parent)


class Ledger:
    """One SQLite file per campaign (or the campaign's rows in the fleet's PostgreSQL); safe to reopen."""

    def __init__(self, db_path: Path, *, database_url: str | None = None) -> None:
        self.db_path = Path(db_path)
        url = database_url or os.environ.get(DATABASE_URL_ENV)
        self._postgres: Any = None
        if url:
            from aka_graph.tools.records.ledger_postgres import PostgresLedgerStore

            self._postgres = PostgresLedgerStore(url, campaign_key(self.db_path))
            return
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        # nodes may run in LangGraph's worker threads: one connection, guarded by SQLite's own locking
        conn = sqlite3.connect(self.db_path, check_same_thread=False, timeout=30)
        self.db = sqlite_utils.Database(conn)
        self._lock = threading.Lock()  # one transaction at a time on the shared connection
        self._initialise()

    def _initialise(self) -> None:
        """WAL mode + tables (`use_wal` retries while several coordinator threads open a fresh ledger)."""

        def schema() -> None:
            with self._lock:
                self._ensure_schema()

        use_wal(self.db.conn, schema)

    def _ensure_schema(self) -> None:
        if EVALUATIONS not in self.db.table_names():
            self.db[EVALUATIONS].create(
                {"id": int, "key": str, "episode": int, "trial": int, "role": str, "kernel_sha256": str,
                 "status": str, "objective": float, "geomean_latency_us": float,
                 "geomean_utilization_pct": float, "timing_method": str, "authoritative": int,
                 "kernel_path": str, "result_path": str, "message": str, "recorded_at": str},
                pk="id", not_null={"key", "role", "kernel_sha256", "status"}, if_not_exists=True)
            self.db[EVALUATIONS].create_index(["key"], unique=True, if_not_exists=True)
        if DECISIONS not in self.db.table_names():
            self.db[DECISIONS].create(
                {"id": int, "key": str, "episode": int, "kind": str, "decision": str,
                 "incumbent_sha256": str, "candidate_sha256": str, "numbers": str, "message": str,
                 "recorded_at": str}, pk="id", not_null={"key", "kind", "decision"}, if_not_exists=True)
            self.db[DECISIONS].create_index(["key"], unique=True, if_not_exists=True)
        if AGENT_RUNS not in self.db.table_names():
            self.db[AGENT_RUNS].create(
                {"id": int, "key": str, "episode": int, "trial": int, "role": str, "attempt": int,
                 "session_id": str, "input": int, "output": int, "cache_read": int, "cache_write": int,
                 "total": int, "accuracy": str, "recorded_at": str}, pk="id", not_null={"key", "role"},
                if_not_exists=True)
            self.db[AGENT_RUNS].create_index(["key"], unique=True, if_not_exists=True)

    def _upsert(self, table: str, row: dict[str, Any], update_when: str | None) -> int:
        """Insert by unique key in ONE statement (atomic across connections and processes); on a
        conflict update the row only when `update_when` (SQL over the old row and `excluded`) holds."""
        if self._postgres is not None:
            return int(self._postgres.upsert(table, row, update_when))
        columns = list(row)
        sql = (f"insert into {table} ({', '.join(columns)}) values ({', '.join('?' * len(columns))}) "
               "on conflict(key) do ")
        if update_when is None:
            sql += "nothing"
        else:
            sets = ", ".join(f"{c} = excluded.{c}" for c in columns if c != "key")
            sql += f"update set {sets} where {update_when}"
        with self._lock, self.db.conn:
            self.db.conn.execute(sql, [row[c] for c in columns])
            found = self.db.conn.execute(f"select id from {table} where key = ?", [row["key"]]).fetchone()
        return int(found[0])

    # ---- evaluations ----------------------------------------------------------------------------
    def record(self, result: EvaluationResult, *, episode: int | None, trial: int | None, role: str,
               kernel_path: Path, result_path: Path) -> int:
        """Record one evaluation; the same (episode, trial, role, kernel sha256) returns the first id.

        An INFRA_ERROR row is replaced by a later real outcome for the same key (an infrastructure
        failure is never a score, and the retried evaluation is the one that counts).
        """
        sha = result.kernel_sha256 or kernel_file_sha256(kernel_path)
        key = _key(episode, trial, role, sha)
        row = {
            "key": key, "episode": episode, "trial": trial, "role": role, "kernel_sha256": sha,
            "status": result.status, "objective": result.summary.objective,
            "geomean_latency_us": result.summary.geomean_latency_us,
            "geomean_utilization_pct": result.summary.geomean_utilization_pct,
            "timing_method": result.timing_method, "authoritative": int(result.authoritative),
            "kernel_path": str(kernel_path), "result_path": str(result_path), "message": result.message,
            "recorded_at": _now(),
        }
        return self._upsert(EVALUATIONS, row, update_when=(
            f"{EVALUATIONS}.status = 'INFRA_ERROR' and excluded.status != 'INFRA_ERROR'"))

    def entries(self, episode: int | None = None, role: str | None = None) -> list[LedgerEntry]:
        where, args = [], []
        if episode is not None:
            where.append("episode = ?")
            args.append(episode)
        if role is not None:
            where.append("role = ?")
            args.append(role)
        if self._postgres is not None:
            return [_entry(r) for r in self._postgres.rows(EVALUATIONS, episode=episode, role=role)]
        rows = self.db[EVALUATIONS].rows_where(" and ".join(where) or None, args, order_by="id")
        return [_entry(r) for r in rows]

    def best_passing(self, episode: int, role: str | None = None) -> LedgerEntry | None:
        """The episode's PASS entry with the lowest objective; ties go to the earliest recorded."""
        passing = [e for e in self.entries(episode, role) if e.status == "PASS" and e.objective is not None]
        if not passing:
            return None
        return min(passing, key=lambda e: (e.objective, e.id))

    # ---- decisions ------------------------------------------------------------------------------
    def record_decision(self, *, episode: int | None, kind: str, decision: str,
                        numbers: dict[str, Any] | None = None, incumbent_sha256: str | None = None,
                        candidate_sha256: str | None = None, message: str = "") -> int:
        """Record a verify/promote/... decision with its numbers; the same (episode, kind) is replaced."""
        key = _key(episode, kind)
        row = {"key": key, "episode": episode, "kind": kind, "decision": decision,
               "incumbent_sha256": incumbent_sha256, "candidate_sha256": candidate_sha256,
               "numbers": json.dumps(numbers or {}, sort_keys=True, default=str), "message": message,
               "recorded_at": _now()}
        return self._upsert(DECISIONS, row, update_when="true")

    def decisions(self, episode: int | None = None) -> list[DecisionEntry]:
        if self._postgres is not None:
            rows: Any = self._postgres.rows(DECISIONS, episode=episode)
        else:
            rows = self.db[DECISIONS].rows_where(
                "episode = ?" if episode is not None else None, [episode] if episode is not None else [],
                order_by="id")
        return [DecisionEntry(**{**{k: r[k] for k in DecisionEntry.model_fields if k != "numbers"},
                                 "numbers": json.loads(r["numbers"] or "{}")}) for r in rows]

    # ---- agent token spend ----------------------------------------------------------------------
    def record_agent_run(self, *, episode: int | None, trial: int | None, role: str, attempt: int,
                         session_id: str | None, tokens: Any) -> int:
        """Record one agent invocation's tokens (a `TokenUsage`); idempotent on (episode, trial, role,
        attempt)."""
        key = _key(episode, trial, role, attempt)
        row = {"key": key, "episode": episode, "trial": trial, "role": role, "attempt": attempt,
               "session_id": session_id, "input": tokens.input, "output": tokens.output,
               "cache_read": tokens.cache_read, "cache_write": tokens.cache_write, "total": tokens.total,
               "accuracy": tokens.accuracy, "recorded_at": _now()}
        return self._upsert(AGENT_RUNS, row, update_when=None)

    def token_total(self) -> int:
        if self._postgres is not None:
            return self._postgres.token_total()
        rows = list(self.db.query(f"select coalesce(sum(total), 0) as t from {AGENT_RUNS}"))
        return int(rows[0]["t"])


def _entry(row: dict[str, Any]) -> LedgerEntry:
    data = {k: row[k] for k in LedgerEntry.model_fields}
    data["authoritative"] = bool(data["authoritative"])
    return LedgerEntry(**data)
