"""Orchestration overhead of the campaign graph with instant fakes (design §7: <= 20 ms per graph step,
<= 2 s from restart to the resumed node).

Measures, on this machine:
  1. a whole campaign with instant fakes (real git workspace, ledger, SQLite checkpoints, sync durability):
     wall time per graph step and per episode;
  2. the orchestration share alone: the gaps between one node finishing and the next starting
     (checkpoint write + scheduling), from the runner's own `tasks` stream;
  3. restart after `kill -9` inside `implement`: from launching the same command again to the resumed node
     starting (process start and imports included), and in-process (checkpoint open + get_state + first task).

Run: python benchmarks/bench_orchestration.py [--repeats N]
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
NODES_DIR = REPO / "tests" / "nodes"
sys.path.insert(0, str(NODES_DIR))

from campaign_fakes import make_context, write_fake_operator  # noqa: E402

from aka_graph.runner import campaign_thread_id, compile_graph, open_checkpointer, thread_config  # noqa: E402
from aka_graph.state import CampaignConfig, CampaignInput  # noqa: E402

SETTINGS = dict(
    platform="cpu", max_iters=4, fast_episodes=2, fast_trials=3, reviewers=["r1", "r2"], agent_cli="fake"
)


def timed_graph(saver: Any, node_seconds: list[float]) -> Any:
    """The real graph, with every node function wrapped to record how long its own body ran."""
    import aka_graph.graph as wiring

    # every node the graph wires (its node names are the node functions' names in aka_graph.graph)
    originals = {name: getattr(wiring, name) for name in wiring.build_graph().nodes}

    def wrap(fn: Any) -> Any:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                node_seconds.append(time.perf_counter() - t0)

        return timed

    try:
        for name, fn in originals.items():
            setattr(wiring, name, wrap(fn))
        return wiring.build_graph().compile(checkpointer=saver)
    finally:
        for name, fn in originals.items():
            setattr(wiring, name, fn)


def one_campaign(tmp: Path) -> dict[str, float]:
    op = write_fake_operator(tmp / "op")
    config = CampaignConfig(op_dir=str(op), workspace=str(tmp / "ws"), **SETTINGS)
    ctx = make_context(config)
    tid = campaign_thread_id(config, ctx)
    node_seconds: list[float] = []
    steps = 0
    with open_checkpointer(tmp / "ws") as saver:
        graph = timed_graph(saver, node_seconds)
        start = time.perf_counter()
        for _ in graph.stream(
            CampaignInput(config=config),
            thread_config(tid),
            context=ctx,
            durability="sync",
            stream_mode="updates",
        ):
            steps += 1
        wall = time.perf_counter() - start
        episodes = graph.get_state(thread_config(tid)).values["episode"]
    overhead = wall - sum(node_seconds)
    return {
        "steps": steps,
        "episodes": episodes,
        "ms_per_step": 1000 * wall / steps,
        "s_per_episode": wall / episodes,
        "overhead_ms_per_step": 1000 * overhead / steps,
        "overhead_ms_per_episode": 1000 * overhead / episodes,
    }


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {
        **os.environ,
        "AKA_GRAPH_CONTEXT_FACTORY": "campaign_fakes:make_context",
        "PYTHONPATH": os.pathsep.join([str(NODES_DIR), os.environ.get("PYTHONPATH", "")]),
        **(extra or {}),
    }


def restart_time(tmp: Path) -> dict[str, float]:
    op = write_fake_operator(tmp / "op")
    args = [
        sys.executable,
        "-m",
        "aka_graph",
        "run",
        "--op-dir",
        str(op),
        "--workspace",
        str(tmp / "ws"),
        "--agent-cli",
        "fake",
        "--max-iters",
        "2",
        "--fast-episodes",
        "1",
        "--platform",
        "cpu",
        "--fast-trials",
        "3",
    ]
    killed = subprocess.run(
        args,
        env=cli_env({"AKA_FAKE_KILL_AT": "implement:agent_finished:2"}),
        capture_output=True,
        text=True,
        cwd=tmp,
    )
    assert killed.returncode == -9, killed.stderr[-2000:]
    # in-process: open the checkpoint, find the pending node, start it
    config = CampaignConfig(
        op_dir=str(op),
        workspace=str(tmp / "ws"),
        platform="cpu",
        agent_cli="fake",
        max_iters=2,
        fast_episodes=1,
        fast_trials=3,
    )
    ctx = make_context(config)
    t0 = time.perf_counter()
    with open_checkpointer(tmp / "ws") as saver:
        graph = compile_graph(saver)
        cfg = thread_config(campaign_thread_id(config, ctx))
        pending = graph.get_state(cfg).next
        for payload in graph.stream(None, cfg, context=ctx, durability="sync", stream_mode="tasks"):
            if "input" in payload:
                in_process = time.perf_counter() - t0
                assert payload["name"] == pending[0]
                break
    # a whole new process (the user re-running the command): until the resumed node's first log line
    killed = subprocess.run(
        args,
        env=cli_env({"AKA_FAKE_KILL_AT": "implement:agent_finished:3"}),
        capture_output=True,
        text=True,
        cwd=tmp,
    )
    assert killed.returncode == -9, killed.stderr[-2000:]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        args, env=cli_env(), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=tmp
    )
    cold = None
    for line in proc.stderr:  # type: ignore[union-attr]
        if "[implement] agent_started" in line:
            cold = time.perf_counter() - t0
            break
    proc.kill()
    proc.wait()
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import aka_graph.cli"], check=True)
    imports = time.perf_counter() - t0
    return {"in_process_s": in_process, "new_process_s": cold or float("nan"), "python_imports_s": imports}


def main() -> None:
    parser = argparse.ArgumentParser(description="Orchestration overhead of the campaign graph")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs, restarts = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as d:
            runs.append(one_campaign(Path(d)))
        with tempfile.TemporaryDirectory() as d:
            restarts.append(restart_time(Path(d)))

    def med(rows: list[dict[str, Any]], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    import langgraph.version as lgv

    rows = [
        (
            "campaign with instant fakes: graph steps / episodes",
            f"{med(runs, 'steps'):.0f} / {med(runs, 'episodes'):.0f}",
            "—",
        ),
        (
            "orchestration overhead per graph step (wall minus node bodies: sync checkpoint write, "
            "scheduling, streaming)",
            f"{med(runs, 'overhead_ms_per_step'):.1f} ms",
            "≤ 20 ms",
        ),
        ("orchestration overhead per episode", f"{med(runs, 'overhead_ms_per_episode'):.0f} ms", "—"),
        (
            "wall time per graph step, node bodies included (git, ledger, records)",
            f"{med(runs, 'ms_per_step'):.1f} ms",
            "—",
        ),
        ("wall time per episode, node bodies included", f"{med(runs, 's_per_episode'):.2f} s", "—"),
        (
            "restart after kill -9 → resumed node starts, in process (open checkpoint, get_state, stream)",
            f"{med(restarts, 'in_process_s') * 1000:.0f} ms",
            "≤ 2 s",
        ),
        (
            "restart after kill -9 → resumed node starts, new `python -m aka_graph run` process",
            f"{med(restarts, 'new_process_s'):.2f} s",
            "≤ 2 s",
        ),
        ("of which Python start + `import aka_graph.cli`", f"{med(restarts, 'python_imports_s'):.2f} s", "—"),
    ]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"langgraph {lgv.__version__}; median of {args.repeats}; campaign settings {SETTINGS}"
    )
    print("| measure | value | goal |")
    print("| --- | --- | --- |")
    for name, value, goal in rows:
        print(f"| {name} | {value} | {goal} |")


if __name__ == "__main__":
    main()
