"""The fleet end to end: 20 small replay campaigns (the demo operator, recorded agent turns) on 3 sshd
'GPU hosts' (2 GPUs each, jobs on the CPU) run by 2 coordinator processes through one PostgreSQL. One
coordinator is killed with `kill -9` mid-run and one host's sshd is killed mid-job (then comes back).

Shown: every campaign finishes with records identical to an uninterrupted run of the same campaign (ledger
rows, decisions, agent runs, memory/v*.json, git history); the dead coordinator's campaigns were taken over
and resumed from their Postgres checkpoints; no GPU ever held two jobs at once (the lease log); the job on
the lost host was retried elsewhere and nothing was charged to a candidate (no INFRA_ERROR in any ledger);
the host rejoined after its probe passed; `fleet status` and `fleet report` describe it all.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import git
import pytest
from psycopg_pool import ConnectionPool

from aka_graph.fleet.coordinator import Coordinator, CoordinatorSettings
from aka_graph.fleet.database import migrated_pool
from aka_graph.fleet.gpu_leases import overlapping_leases
from aka_graph.fleet.hosts import load_hosts
from aka_graph.tools.records.ledger import campaign_key
from tests.fleet.conftest import create_database, drop_database, server_url
from tests.fleet.ssh_hosts import FakeGpuHosts, start_hosts, write_fake_nvidia_smi

pytestmark = [pytest.mark.slow, pytest.mark.ssh, pytest.mark.bwrap]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
EXAMPLE = REPO / "aka_graph" / "examples" / "vq_nearest_code"
CAMPAIGNS = 20
VOLATILE = {"created_at", "updated_at", "recorded_at", "id", "commit", "started_at", "finished_at"}
SETTINGS = """[defaults]
agent_cli = "replay"
replay_script = "op/replay.json"
platform = "cpu"
max_iters = 2
fast_episodes = 1
fast_trials = 2
seeds = 1
verify_repeats = 2
environment_poll_interval = 0.5
token_budget = 1000000
"""


def campaigns_file(path: Path, names: list[str]) -> Path:
    """The campaigns, on a snapshot of the demo operator beside the file (every run sees the same one)."""
    if not (path.parent / "op").exists():
        shutil.copytree(EXAMPLE, path.parent / "op")
    entries = "".join(f'\n[[campaign]]\nop_dir = "op"\nname = "{name}"\n' for name in names)
    path.write_text(SETTINGS + entries)
    return path


def env(hold_file: Path | None = None) -> dict[str, str]:
    return {
        **os.environ,
        **({"AKA_JUDGE_HOLD_WHERE_FILE": str(hold_file)} if hold_file else {}),
        "AKA_GRAPH_CONTEXT_FACTORY": "fleet_context:make_context",
        "PYTHONPATH": os.pathsep.join([str(HERE), str(REPO), os.environ.get("PYTHONPATH", "")]),
    }


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "aka_graph", "fleet", *args],
        env=env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _scrub(value: Any, root: str) -> Any:
    if isinstance(value, dict):
        return {k: _scrub(v, root) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_scrub(v, root) for v in value]
    if isinstance(value, str):
        return value.replace(root, "<ws>")
    return value


def records(pool: ConnectionPool, workspace: Path) -> dict[str, Any]:
    """Everything a campaign leaves behind, minus ids, timestamps, commit hashes and its own path."""
    (root,) = [p for p in workspace.iterdir() if p.name.startswith("kernel_opt_")]
    key, text = campaign_key(root / "records" / "ledger.sqlite"), str(root)
    with pool.connection() as conn:
        evaluations = conn.execute(
            "select episode, trial, role, kernel_sha256, status, objective, timing_method from "
            "ledger_evaluations where campaign = %s order by id",
            [key],
        ).fetchall()
        decisions = conn.execute(
            "select episode, kind, decision, incumbent_sha256, candidate_sha256, numbers, message "
            "from ledger_decisions where campaign = %s order by id",
            [key],
        ).fetchall()
        agent_runs = conn.execute(
            "select episode, trial, role, attempt, total from ledger_agent_runs where campaign = %s "
            "order by episode, trial, role, attempt",
            [key],
        ).fetchall()
    memory = {
        p.name: _scrub(json.loads(p.read_text()), text) for p in sorted((root / "memory").glob("v*.json"))
    }
    repo = git.Repo(root)
    history = [c.message.strip() for c in repo.iter_commits(repo.active_branch.name)]
    return {
        "evaluations": evaluations,
        "decisions": _scrub([dict(d, numbers=json.loads(d["numbers"])) for d in decisions], text),
        "agent_runs": agent_runs,
        "memory": memory,
        "history": history,
    }


def wait_for(what: str, predicate: Callable[[], Any], timeout_s: float = 240) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        found = predicate()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def query(pool: ConnectionPool, sql: str, *args: Any) -> list[dict[str, Any]]:
    with pool.connection() as conn:
        return conn.execute(sql, list(args)).fetchall()


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[FakeGpuHosts]:
    started = start_hosts(
        tmp_path / "hosts", ["h1", "h2", "h3"], write_fake_nvidia_smi(tmp_path), gpus=[0, 1], light_probe=True
    )
    yield started
    started.stop()


@pytest.mark.timeout(600)
def test_twenty_campaigns_two_coordinators_one_killed_one_host_lost(
    database_url: str, hosts: FakeGpuHosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = migrated_pool(database_url)
    # the uninterrupted run of the same campaign, in its own database, by an in-process coordinator
    reference_url = create_database(server_url())
    try:
        for key, value in env().items():
            monkeypatch.setenv(key, value)
        sys.path.insert(0, str(HERE))
        cli(
            "submit",
            str(campaigns_file(tmp_path / "one.toml", ["ref"])),
            "--workspace",
            str(tmp_path / "ref"),
            "--database-url",
            reference_url,
        )
        monkeypatch.setenv("AKA_DATABASE_URL", reference_url)  # as the coordinator sets it; undone after
        settings = CoordinatorSettings(
            database_url=reference_url, hosts=load_hosts(hosts.hosts_file), lease_ttl_s=5, poll_s=0.1
        )
        assert Coordinator(settings).work() == ["ref-triton"]
        expected = records(migrated_pool(reference_url), tmp_path / "ref" / "ref-triton")
    finally:
        monkeypatch.delenv("AKA_DATABASE_URL", raising=False)
        drop_database(server_url(), reference_url)
    pool = migrated_pool(database_url)
    assert [r["status"] for r in expected["evaluations"]][:3] == ["PASS", "INCORRECT", "PASS"]
    assert [d["decision"] for d in expected["decisions"] if d["kind"] == "verify"] == ["promoted", "rejected"]

    names = [f"c{i:02d}" for i in range(CAMPAIGNS)]
    cli(
        "submit",
        str(campaigns_file(tmp_path / "fleet.toml", names)),
        "--workspace",
        str(tmp_path / "ws"),
        "--database-url",
        database_url,
    )
    work = [
        "fleet",
        "work",
        "--hosts",
        str(hosts.hosts_file),
        "--database-url",
        database_url,
        "--lease-ttl",
        "3",
        "--poll",
        "0.2",
        "--probe-interval",
        "0.5",
        "--concurrency",
        "4",
    ]
    hold_file = tmp_path / "hold.json"  # while it exists, judge jobs on h2 hold their GPU for 5 s
    hold_file.write_text(json.dumps({"/h2/": 5}))
    logs = [open(tmp_path / f"coordinator{i}.log", "w") for i in range(2)]  # noqa: SIM115
    coordinators = [
        subprocess.Popen(
            [sys.executable, "-m", "aka_graph", *work],
            env=env(hold_file),
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        for log in logs
    ]
    victim, survivor = coordinators
    try:
        # kill -9 the first coordinator while it holds campaigns and one of them has a job on a GPU
        def victim_busy() -> list[dict[str, Any]]:
            done = query(pool, "select count(*) as n from fleet_campaigns where state = 'finished'")[0]["n"]
            held = query(
                pool,
                "select id from fleet_campaigns where holder like %s and state = 'running'",
                f"%:{victim.pid}:%",
            )
            on_gpu = query(
                pool,
                "select id from fleet_gpu_leases where holder like %s and ended_at is null",
                f"%:{victim.pid}:%",
            )
            return held if done >= 2 and held and on_gpu else []

        wait_for("the first coordinator to be mid-job", victim_busy)
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        orphans = {
            r["id"]
            for r in query(
                pool,
                "select id from fleet_campaigns where holder like %s and state = 'running'",
                f"%:{victim.pid}:%",
            )
        }
        assert orphans

        # then lose host h2 in the middle of a job, and bring it back once it has been drained
        remote_tmp = tmp_path / "hosts" / "h2" / "tmp"
        killed_at = time.time()  # (a job the dead coordinator left on h2 does not count)
        wait_for(
            "a judge job running on h2",
            lambda: [p for p in remote_tmp.glob("aka-job-*/work/started") if p.stat().st_mtime > killed_at],
        )
        hosts.servers["h2"].kill_hard()
        hold_file.unlink()
        wait_for(
            "h2 drained",
            lambda: query(pool, "select id from fleet_host_events where host = 'h2' and event = 'drained'"),
        )
        hosts.servers["h2"].start()

        assert survivor.wait(timeout=420) == 0, (tmp_path / "coordinator1.log").read_text()[-4000:]
    finally:
        for proc in coordinators:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for log in logs:
            log.close()

    rows = {r["id"]: r for r in query(pool, "select * from fleet_campaigns")}
    assert sorted(rows) == [f"{n}-triton" for n in names]
    assert {r["state"] for r in rows.values()} == {"finished"}, {k: r["message"] for k, r in rows.items()}
    # the killed coordinator's campaigns were taken over by the other one and resumed from checkpoints
    assert all(rows[cid]["takeovers"] >= 1 for cid in orphans)
    for cid in rows:
        assert records(pool, tmp_path / "ws" / cid) == expected, cid
    # no GPU ever held two jobs at once; the lost host's job ran again elsewhere, uncharged
    assert overlapping_leases(pool) == []
    h2_log = query(pool, "select * from fleet_gpu_leases where host = 'h2' order by id")
    assert [r for r in h2_log if r["outcome"] == "environment"], h2_log
    assert query(pool, "select id from ledger_evaluations where status = 'INFRA_ERROR'") == []
    events = [
        (e["host"], e["event"]) for e in query(pool, "select host, event from fleet_host_events order by id")
    ]
    assert ("h2", "drained") in events and events.index(("h2", "drained")) < events.index(("h2", "rejoined"))
    assert [r["state"] for r in query(pool, "select state from fleet_hosts order by name")] == ["up"] * 3

    status = cli("status", "--check", "--database-url", database_url).stdout
    assert status.count("finished") == CAMPAIGNS and "1.667x" in status and "0 overlapping" in status
    report = cli("report", "--out", str(tmp_path / "report"), "--database-url", database_url)
    assert (tmp_path / "report" / "fleet_speedups.png").stat().st_size > 1000
    assert "vq_nearest_code" in report.stdout or "c00-triton" in report.stdout
