"""The ledger counts every evaluation exactly once and picks the best trial itself."""

from __future__ import annotations

import threading
from pathlib import Path

from aka_graph.cli_agents.base import TokenUsage
from aka_graph.tools.evaluator.evaluation_result import DeviceInfo, EvaluationResult, Summary
from aka_graph.tools.records.ledger import Ledger


def _result(sha: str, status: str = "PASS", objective: float | None = 10.0) -> EvaluationResult:
    return EvaluationResult(
        status=status, kernel_sha256=sha, device=DeviceInfo(name="cpu", arch="cpu"),
        timing_method="host_interpreter", authoritative=False,
        summary=Summary(objective=objective, geomean_latency_us=objective))


def _record(ledger: Ledger, tmp_path: Path, sha: str, trial: int, **kw: object) -> int:
    return ledger.record(_result(sha, **kw), episode=1, trial=trial, role="trial",
                         kernel_path=tmp_path / "k.py", result_path=tmp_path / f"r{trial}.json")


def test_recording_is_idempotent_across_reopen(tmp_path: Path) -> None:
    db = tmp_path / "ledger.sqlite"
    first = _record(Ledger(db), tmp_path, "a" * 64, trial=1)
    assert _record(Ledger(db), tmp_path, "a" * 64, trial=1) == first
    assert len(Ledger(db).entries(1)) == 1
    assert _record(Ledger(db), tmp_path, "b" * 64, trial=1) != first  # a different kernel counts


def test_infra_error_is_replaced_by_the_real_outcome(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    rid = _record(ledger, tmp_path, "a" * 64, trial=1, status="INFRA_ERROR", objective=None)
    assert _record(ledger, tmp_path, "a" * 64, trial=1, objective=7.0) == rid
    (entry,) = ledger.entries(1)
    assert (entry.status, entry.objective) == ("PASS", 7.0)


def test_best_passing_lowest_objective_ties_to_earliest(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    _record(ledger, tmp_path, "1" * 64, trial=1, status="INCORRECT", objective=1.0)
    _record(ledger, tmp_path, "2" * 64, trial=2, objective=5.0)
    _record(ledger, tmp_path, "3" * 64, trial=3, objective=3.0)
    _record(ledger, tmp_path, "4" * 64, trial=4, objective=3.0)
    best = ledger.best_passing(1)
    assert best is not None and (best.trial, best.kernel_sha256) == (3, "3" * 64)
    assert ledger.best_passing(2) is None


def test_missing_sha_falls_back_to_the_kernel_file(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    (tmp_path / "k.py").write_text("def run(): pass\n")
    _record(ledger, tmp_path, "", trial=1, status="INFRA_ERROR", objective=None)
    assert len(ledger.entries()[0].kernel_sha256) == 64


def test_decisions_keep_their_numbers_and_replace_on_rerun(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    ledger.record_decision(episode=1, kind="verify", decision="rejected", numbers={"improvement_pct": -3.0})
    ledger.record_decision(episode=1, kind="verify", decision="promoted", numbers={"improvement_pct": 12.5},
                           incumbent_sha256="a", candidate_sha256="b")
    (d,) = ledger.decisions(1)
    assert (d.decision, d.numbers["improvement_pct"], d.candidate_sha256) == ("promoted", 12.5, "b")


def test_agent_token_spend_counted_once(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    usage = TokenUsage(input=10, output=5, total=15, accuracy="exact")
    for _ in range(2):
        ledger.record_agent_run(episode=1, trial=1, role="implementer", attempt=0, session_id="s",
                                tokens=usage)
    ledger.record_agent_run(episode=1, trial=2, role="implementer", attempt=0, session_id="s", tokens=usage)
    assert ledger.token_total() == 30


def test_concurrent_recorders_count_each_trial_once(tmp_path: Path) -> None:
    db = tmp_path / "l.sqlite"
    opened = [threading.Thread(target=Ledger, args=(db,)) for _ in range(3)]  # racing schema creation
    for t in opened:
        t.start()
    for t in opened:
        t.join()
    shared = Ledger(db)

    errors: list[BaseException] = []

    def work(i: int) -> None:
        ledger = shared if i % 2 else Ledger(db)  # one connection shared by threads, and separate ones
        try:
            for trial in range(5):
                _record(ledger, tmp_path, f"{trial}" * 64, trial=trial)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(e.trial for e in shared.entries(1)) == [0, 1, 2, 3, 4]
