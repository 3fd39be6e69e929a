"""Coordinator overhead of a fleet (PostgreSQL) against a single machine (SQLite), 1 -> 50 campaigns.

What a coordinator adds around the work itself (agents, evaluations), measured with instant nodes and
instant jobs so that only the bookkeeping is timed:

  step      one graph step of a campaign: LangGraph's checkpoint write (durability "sync") of a state the
            size of a real campaign's, plus — in a fleet — the registry's progress row. SQLite: one
            SqliteSaver on the workspace's file (WAL), as `run` does for concurrent campaigns. Postgres: a
            PostgresSaver per campaign over the coordinator's pool + `Registry.progress`.
  dispatch  one job's bookkeeping: SQLite (single machine): the host-wide GPU file lock (flock) taken and
            released + one ledger row; Postgres (fleet): a GPU lease taken (FOR UPDATE SKIP LOCKED, lease
            log row) and released + one ledger row.

C concurrent campaigns (threads of one coordinator process, as `fleet work --concurrency C` runs them)
each do S steps and J dispatches; the table gives the median and p95 latency per operation and the
aggregate rate. Postgres runs need a server: --database-url or AKA_TEST_DATABASE_URL
(`bash tests/fleet/start_postgres.sh` starts one). A fresh database is created and dropped per run.

Run: python benchmarks/bench_fleet.py [--campaigns 1 5 10 25 50] [--steps 40] [--jobs 20]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from langgraph.graph import END, START, StateGraph  # noqa: E402

from aka_graph.state import CampaignConfig, CampaignState, Incumbent, TrialRecord  # noqa: E402
from aka_graph.tools.evaluator.evaluation_result import DeviceInfo, EvaluationResult, Summary  # noqa: E402
from aka_graph.tools.records.ledger import Ledger  # noqa: E402


class LoopState(TypedDict):
    step: int
    campaign: dict[str, Any]


def campaign_payload() -> dict[str, Any]:
    """A campaign state as it looks mid-run (config, incumbent, five trials): the checkpointed size."""
    state = CampaignState(
        config=CampaignConfig(op_dir="/ops/rmsnorm", platform="H200", max_iters=10, token_budget=2_000_000),
        incumbent=Incumbent(
            version=3, objective=61.2, sha256="c" * 64, kernel_path="/ws/v3", commit="a" * 40
        ),
        trials=[
            TrialRecord(
                episode=4, trial=t, kernel_dir=f"/ws/e4/t{t}", sha256="b" * 64, status="PASS", objective=60.0
            )
            for t in range(1, 6)
        ],
        tokens_spent=123_456,
    )
    return state.model_dump(mode="json")


def loop_graph(steps: int, on_step: Callable[[], None]) -> StateGraph:
    def step(state: LoopState) -> dict[str, Any]:
        return {"step": state["step"] + 1, "campaign": {**state["campaign"], "tokens_spent": state["step"]}}

    builder = StateGraph(LoopState)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda s: END if s["step"] >= steps else "step")
    return builder


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_concurrently(campaigns: int, work: Callable[[int], list[float]]) -> tuple[list[float], float]:
    samples: list[list[float]] = [[] for _ in range(campaigns)]
    barrier = threading.Barrier(campaigns)

    def one(i: int) -> None:
        barrier.wait()
        samples[i] = work(i)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(campaigns)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [s for per in samples for s in per], time.perf_counter() - start


def timed_steps(compiled: Any, thread_id: str, steps: int, after_step: Callable[[], None]) -> list[float]:
    cfg = {"configurable": {"thread_id": thread_id}, "recursion_limit": 10 * steps}
    times, last = [], time.perf_counter()
    for _ in compiled.stream(
        {"step": 0, "campaign": campaign_payload()}, cfg, durability="sync", stream_mode="updates"
    ):
        after_step()
        now = time.perf_counter()
        times.append(now - last)
        last = now
    return times


def result(i: int) -> EvaluationResult:
    return EvaluationResult(
        status="PASS",
        kernel_sha256=uuid.uuid4().hex * 2,
        device=DeviceInfo(name="NVIDIA H200", arch="sm_90"),
        timing_method="cuda_graph",
        authoritative=True,
        summary=Summary(objective=50.0 + i, geomean_latency_us=50.0 + i),
    )


# -- SQLite (single machine) ---------------------------------------------------------------------------


def sqlite_steps(root: Path, campaigns: int, steps: int) -> tuple[list[float], float]:
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    from aka_graph.checkpoint_serde import campaign_serde

    path = root / "checkpoints" / "campaign.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
    conn.execute("PRAGMA journal_mode=WAL")
    compiled = loop_graph(steps, lambda: None).compile(checkpointer=SqliteSaver(conn, serde=campaign_serde()))
    try:
        return run_concurrently(campaigns, lambda i: timed_steps(compiled, f"c{i}", steps, lambda: None))
    finally:
        conn.close()


def sqlite_dispatch(root: Path, campaigns: int, jobs: int) -> tuple[list[float], float]:
    def work(i: int) -> list[float]:
        ledger = Ledger(root / f"c{i}" / "records" / "ledger.sqlite")
        lock_path = root / f"gpu-{i % 8}.lock"  # eight GPUs on the one host
        times = []
        for j in range(jobs):
            t0 = time.perf_counter()
            with open(lock_path, "a+") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                fcntl.flock(lock, fcntl.LOCK_UN)
            ledger.record(
                result(j),
                episode=1,
                trial=j,
                role="trial",
                kernel_path=root / "k.py",
                result_path=root / "r.json",
            )
            times.append(time.perf_counter() - t0)
        return times

    return run_concurrently(campaigns, work)


# -- PostgreSQL (fleet) --------------------------------------------------------------------------------


def postgres_steps(url: str, campaigns: int, steps: int) -> tuple[list[float], float]:
    from aka_graph.fleet.checkpointer import postgres_checkpointer
    from aka_graph.fleet.database import migrated_pool
    from aka_graph.fleet.registry import Registry

    pool = migrated_pool(url)
    registry = Registry(pool)
    holder = f"bench-{uuid.uuid4().hex[:6]}"
    ids = [f"s{campaigns}-{i}-{uuid.uuid4().hex[:6]}" for i in range(campaigns)]
    for cid in ids:
        registry.submit(cid, "op", "triton", {"op_dir": "/ops/x"})
    while registry.take(holder, 600) is not None:
        pass
    builder = loop_graph(steps, lambda: None)

    def work(i: int) -> list[float]:
        # one saver per campaign, as the coordinator does: a PostgresSaver serialises its own calls
        compiled = builder.compile(checkpointer=postgres_checkpointer(pool))
        return timed_steps(
            compiled, ids[i], steps, lambda: registry.progress(ids[i], holder, node="step", tokens_spent=i)
        )

    return run_concurrently(campaigns, work)


def postgres_dispatch(url: str, root: Path, campaigns: int, jobs: int) -> tuple[list[float], float]:
    from aka_graph.fleet.database import migrated_pool
    from aka_graph.fleet.gpu_leases import GpuLeases

    leases = GpuLeases(migrated_pool(url))
    leases.register_hosts((f"h{h}", f"h{h}", list(range(8))) for h in range(8))  # 64 GPUs

    def work(i: int) -> list[float]:
        ledger = Ledger(root / f"pc{campaigns}-{i}" / "records" / "ledger.sqlite", database_url=url)
        times = []
        for j in range(jobs):
            t0 = time.perf_counter()
            while (
                lease := leases.acquire(f"bench{i}", f"c{i}", "evaluate", exclusive=True, ttl_s=60)
            ) is None:
                time.sleep(0.001)
            leases.release(lease, "exit 0")
            ledger.record(
                result(j),
                episode=1,
                trial=j,
                role="trial",
                kernel_path=root / "k.py",
                result_path=root / "r.json",
            )
            times.append(time.perf_counter() - t0)
        return times

    return run_concurrently(campaigns, work)


def row(store: str, what: str, campaigns: int, samples: list[float], wall: float) -> str:
    ms = [s * 1000 for s in samples]
    return (
        f"| {store} | {what} | {campaigns} | {statistics.median(ms):.2f} | {percentile(ms, 0.95):.2f} | "
        f"{len(samples) / wall:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, nargs="+", default=[1, 5, 10, 25, 50])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--database-url", default=os.environ.get("AKA_TEST_DATABASE_URL"))
    args = parser.parse_args()
    if not args.database_url:
        sys.exit(
            "bench_fleet: no PostgreSQL: pass --database-url or set AKA_TEST_DATABASE_URL "
            "(bash tests/fleet/start_postgres.sh prints one)"
        )
    sys.path.insert(0, str(REPO / "tests" / "fleet"))
    from conftest import create_database, drop_database  # the fleet tests' fresh-database helpers

    from aka_graph.fleet.database import close_pools

    print(
        f"# {platform.node()}: {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load {os.getloadavg()[0]:.1f}; {args.steps} steps and {args.jobs} dispatches per campaign"
    )
    print("| store | operation | campaigns | median ms | p95 ms | ops/s (all campaigns) |")
    print("|---|---|---|---|---|---|")
    url = create_database(args.database_url)
    try:
        for campaigns in args.campaigns:
            with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
                root = Path(tmp)
                print(
                    row("SQLite", "step", campaigns, *sqlite_steps(root, campaigns, args.steps)), flush=True
                )
                print(
                    row("Postgres", "step", campaigns, *postgres_steps(url, campaigns, args.steps)),
                    flush=True,
                )
                print(
                    row("SQLite", "dispatch", campaigns, *sqlite_dispatch(root, campaigns, args.jobs)),
                    flush=True,
                )
                print(
                    row(
                        "Postgres", "dispatch", campaigns, *postgres_dispatch(url, root, campaigns, args.jobs)
                    ),
                    flush=True,
                )
    finally:
        close_pools()
        drop_database(args.database_url, url)


if __name__ == "__main__":
    main()
