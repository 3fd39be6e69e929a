"""GPU leases through the database, and the SSH host pool: drain on an environment failure, retry the job
elsewhere, rejoin after a passing probe — with real sshd 'hosts' on 127.0.0.1 (jobs on the CPU)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg_pool import ConnectionPool

from aka_graph.fleet.gpu_leases import GpuLeases, overlapping_leases
from aka_graph.fleet.hosts import HostsFileError, load_hosts, parse_hosts
from aka_graph.fleet.pool import PoolSandbox, SandboxCache
from aka_graph.tools.evaluator.sandbox import SandboxJob
from tests.fleet.ssh_hosts import FakeGpuHosts, start_hosts, write_fake_nvidia_smi


def _leases(pool: ConnectionPool, hosts: dict[str, list[int]]) -> GpuLeases:
    leases = GpuLeases(pool)
    leases.register_hosts((name, name, gpus) for name, gpus in hosts.items())
    return leases


def test_a_gpu_never_holds_two_leases_and_the_log_check_catches_one(pool: ConnectionPool) -> None:
    leases = _leases(pool, {"h1": [0], "h2": [0, 1]})
    held, most = set(), [0]
    lock = threading.Lock()
    barrier = threading.Barrier(6)

    def worker(n: int) -> None:
        barrier.wait()
        for _ in range(15):
            lease = leases.acquire(f"c{n}", f"camp{n}", "job", exclusive=True, ttl_s=60)
            if lease is None:
                continue
            with lock:
                assert (lease.host, lease.gpu) not in held
                held.add((lease.host, lease.gpu))
                most[0] = max(most[0], len(held))
            with lock:
                held.discard((lease.host, lease.gpu))
            leases.release(lease, "exit 0")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] <= 3
    assert overlapping_leases(pool) == []
    with pool.connection() as conn:  # a second lease on a busy GPU, written behind the leases' back
        conn.execute(
            "insert into fleet_gpu_leases (host, gpu, holder, exclusive, started_at, expires_at, ended_at) "
            "select host, gpu, 'rogue', true, started_at, expires_at, ended_at from fleet_gpu_leases "
            "order by id limit 1"
        )
    assert len(overlapping_leases(pool)) == 1


def test_drained_hosts_get_no_leases_and_an_expired_lease_ends_at_its_expiry(pool: ConnectionPool) -> None:
    leases = _leases(pool, {"h1": [0], "h2": [0]})
    assert leases.drain("h1", "transport: connection refused")
    first = leases.acquire("dead", "c1", "evaluate", exclusive=True, ttl_s=60)
    assert first is not None and first.host == "h2"
    assert leases.acquire("other", "c2", "evaluate", exclusive=True, ttl_s=60) is None  # h2 busy, h1 out
    with pool.connection() as conn:  # the holder was killed: its lease lies a minute in the past
        conn.execute(  # (an expiry 1 ms after the start could still be ahead when the next acquire runs)
            "update fleet_gpu_leases set started_at = started_at - interval '1 minute', "
            "expires_at = started_at - interval '1 minute' + interval '1 millisecond' where id = %s",
            [first.lease_id],
        )
        conn.execute(
            "update fleet_gpus set expires_at = l.expires_at from fleet_gpu_leases l where l.id = %s "
            "and fleet_gpus.lease_id = l.id",
            [first.lease_id],
        )
    second = leases.acquire("other", "c2", "evaluate", exclusive=True, ttl_s=60)
    assert second is not None and second.host == "h2"
    leases.release(first, "exit 0")  # the dead holder's late release must not free the new lease
    assert leases.renew_lease(second, 60)
    with pool.connection() as conn:
        rows = conn.execute("select id, outcome from fleet_gpu_leases order by id").fetchall()
    assert [r["outcome"] for r in rows] == ["expired", None]
    assert overlapping_leases(pool) == []
    assert leases.claim_probe(3600) == []  # drained just now: its probe is not due yet
    assert leases.claim_probe(0) == ["h1"]
    assert leases.rejoin("h1") and leases.up_hosts() == ["h1", "h2"]


def test_hosts_file_errors_name_the_host_and_key(tmp_path: Path) -> None:
    with pytest.raises(HostsFileError, match=r"host #2 \(b\): gpus"):
        parse_hosts(
            {"host": [{"name": "a", "target": "a", "gpus": [0]}, {"name": "b", "target": "b", "gpus": []}]}
        )
    with pytest.raises(HostsFileError, match="unique"):
        parse_hosts({"host": [{"name": "a", "target": "a", "gpus": [0]}] * 2})
    with pytest.raises(HostsFileError, match=r"\[defaults\] cannot set \['gpus'\]"):
        parse_hosts({"defaults": {"gpus": [0]}, "host": [{"name": "a", "target": "a", "gpus": [0]}]})
    (tmp_path / "bad.toml").write_text("[[host]\n")
    with pytest.raises(HostsFileError, match="not valid TOML"):
        load_hosts(tmp_path / "bad.toml")


@pytest.fixture
def two_hosts(tmp_path: Path) -> Iterator[FakeGpuHosts]:
    hosts = start_hosts(tmp_path / "hosts", ["h1", "h2"], write_fake_nvidia_smi(tmp_path))
    yield hosts
    hosts.stop()


def _wait_for(predicate, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


@pytest.mark.ssh
@pytest.mark.bwrap
def test_a_host_lost_mid_job_is_drained_the_job_reruns_elsewhere_and_the_host_rejoins(
    pool: ConnectionPool, two_hosts: FakeGpuHosts, tmp_path: Path
) -> None:
    specs = load_hosts(two_hosts.hosts_file)
    leases = _leases(pool, {h.name: h.gpus for h in specs})
    cache = SandboxCache(specs)
    sandbox = PoolSandbox(leases, cache, holder="coord", campaign="c1", lease_ttl_s=30, probe_interval_s=3600)
    # h1 is picked first (never used); on h1 the job would sleep, so it is surely running when h1 dies
    job = SandboxJob(
        argv=[
            "sh",
            "-c",
            'touch started; case "$PWD" in */h1/*) sleep 60;; esac; echo "ran on ${PWD}" > out',
        ],
        sync_back=["out"],
        timeout_s=120,
        exclusive_gpu=True,
        label="evaluate",
    )
    outcome: dict[str, object] = {}
    runner = threading.Thread(target=lambda: outcome.update(result=sandbox.run(job, tmp_path / "results")))
    runner.start()
    _wait_for(lambda: any((tmp_path / "hosts" / "h1" / "tmp").glob("aka-job-*/work/started")))
    two_hosts.servers["h1"].kill_hard()
    runner.join(120)
    result = outcome["result"]
    assert result.exit_code == 0 and not result.is_environment_failure  # type: ignore[attr-defined]
    assert "/h2/" in (tmp_path / "results" / "out").read_text()
    with pool.connection() as conn:
        log = conn.execute("select host, outcome from fleet_gpu_leases order by id").fetchall()
        events = conn.execute("select host, event from fleet_host_events order by id").fetchall()
    assert [(r["host"], r["outcome"]) for r in log] == [("h1", "environment"), ("h2", "exit 0")]
    assert [(e["host"], e["event"]) for e in events] == [("h1", "drained")]
    assert leases.up_hosts() == ["h2"]
    # the host comes back: the next health check probes it and it rejoins the pool
    two_hosts.servers["h1"].start()
    sandbox.probe_interval_s = 0.0  # its next probe is due
    assert sandbox.health().healthy
    assert leases.up_hosts() == ["h1", "h2"]
    assert overlapping_leases(pool) == []
    cache.close()
