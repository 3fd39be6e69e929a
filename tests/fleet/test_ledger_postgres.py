"""The ledger's PostgreSQL backend behaves exactly like the SQLite one (same calls, same rows)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from aka_graph.cli_agents.base import TokenUsage
from aka_graph.tools.evaluator.evaluation_result import DeviceInfo, EvaluationResult, Summary
from aka_graph.tools.records.ledger import DATABASE_URL_ENV, Ledger

VOLATILE = {"id", "recorded_at"}


def _result(sha: str, status: str = "PASS", objective: float | None = 10.0) -> EvaluationResult:
    return EvaluationResult(
        status=status,
        kernel_sha256=sha,
        device=DeviceInfo(name="cpu", arch="cpu"),
        timing_method="host_interpreter",
        authoritative=False,
        summary=Summary(objective=objective, geomean_latency_us=objective),
    )


def exercise(ledger: Ledger, root: Path) -> dict[str, Any]:
    """Every ledger operation a campaign uses, including the idempotent and replacing ones."""

    def record(sha: str, trial: int, **kw: Any) -> int:
        return ledger.record(
            _result(sha, **kw),
            episode=1,
            trial=trial,
            role="trial",
            kernel_path=root / "k.py",
            result_path=root / f"r{trial}.json",
        )

    first = record("a" * 64, 1, status="INFRA_ERROR", objective=None)
    again = record("a" * 64, 1, objective=7.0)  # the retried evaluation replaces the infra error
    record("a" * 64, 1, objective=99.0)  # a re-run node never counts twice, never overwrites a score
    record("b" * 64, 2, status="INCORRECT", objective=1.0)
    record("c" * 64, 3, objective=3.0)
    record("d" * 64, 4, objective=3.0)
    ledger.record_decision(episode=1, kind="verify", decision="rejected", numbers={"x": 1})
    ledger.record_decision(episode=1, kind="verify", decision="promoted", numbers={"x": 2}, message="ok")
    tokens = TokenUsage(input=10, output=5, total=15, accuracy="exact")
    for attempt in (1, 1, 2):
        ledger.record_agent_run(
            episode=1, trial=1, role="implementer", attempt=attempt, session_id="s", tokens=tokens
        )
    best = ledger.best_passing(1)
    return {
        "same_id": first == again,
        "entries": [{k: v for k, v in e.model_dump().items() if k not in VOLATILE} for e in ledger.entries()],
        "trial_entries": len(ledger.entries(1, "trial")),
        "best": (best.trial, best.objective) if best else None,
        "decisions": [
            {k: v for k, v in d.model_dump().items() if k not in VOLATILE} for d in ledger.decisions()
        ],
        "tokens": ledger.token_total(),
    }


def test_postgres_ledger_matches_sqlite(database_url: str, tmp_path: Path) -> None:
    root = tmp_path / "kernel_opt_x"
    expected = exercise(Ledger(root / "records" / "ledger.sqlite"), root)
    got = exercise(Ledger(tmp_path / "pg" / "records" / "ledger.sqlite", database_url=database_url), root)
    assert expected["same_id"] and expected["best"] == (3, 3.0) and expected["tokens"] == 30
    assert got == expected
    assert not (tmp_path / "pg" / "records" / "ledger.sqlite").exists()  # no SQLite file in a fleet


def test_the_environment_variable_moves_the_ledger_and_campaigns_stay_apart(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATABASE_URL_ENV, database_url)
    one = Ledger(tmp_path / "one" / "records" / "ledger.sqlite")
    two = Ledger(tmp_path / "two" / "records" / "ledger.sqlite")
    exercise(one, tmp_path)
    assert two.entries() == [] and two.token_total() == 0
    reopened = Ledger(tmp_path / "one" / "records" / "ledger.sqlite")
    assert len(reopened.entries()) == 4 and reopened.token_total() == 30


def test_concurrent_coordinators_record_a_trial_once(database_url: str, tmp_path: Path) -> None:
    path = tmp_path / "c" / "records" / "ledger.sqlite"
    ids: list[int] = []
    barrier = threading.Barrier(4)

    def record() -> None:
        ledger = Ledger(path, database_url=database_url)
        barrier.wait()
        ids.append(
            ledger.record(
                _result("e" * 64),
                episode=2,
                trial=1,
                role="trial",
                kernel_path=tmp_path / "k.py",
                result_path=tmp_path / "r.json",
            )
        )

    threads = [threading.Thread(target=record) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 1 and len(Ledger(path, database_url=database_url).entries()) == 1
