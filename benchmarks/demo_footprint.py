"""The demo campaign under a chosen host load: wall time, peak memory and outcome, in one table
(`demo_under_load.py` checks the verdicts of repeated runs; this one measures time and memory).

    python benchmarks/demo_footprint.py --busy 3      # ~ load 4 on a 2-core host: 3 busy loops + the demo

Starts `--busy` bounded busy loops (each stops after `--limit` s at the latest, and when the demo ends),
runs `python -m aka_graph run` (the demo) in a fresh directory, and samples the demo's whole process tree
from /proc every 0.2 s (standard library only): the largest single process's RSS (the harness parent or
worker), the tree's RSS sum (shared library pages counted once per process) and the tree's PSS sum (each
shared page split between the processes that map it: the tree's real footprint). The busy loops start
`--warmup` s before the demo so that the 1-min load average has risen to ~busy+1 when it begins. The load
average is sampled too, since other work on the host adds to it. Exits non-zero unless the demo
finished with a promotion and a rejection.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def busy(deadline: float) -> None:
    while time.monotonic() < deadline:
        pass


def tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rfind(")") + 2 :].split()[1]), []).append(int(entry.name))
    found, todo = [root], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def pss_mb(pid: int) -> float:
    """Proportional set size: shared pages (torch's libraries, mapped by every process of the tree)
    counted once across the tree rather than once per process, so the sum is the tree's real footprint."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=3, help="busy loops beside the demo (load ~ busy + 1)")
    parser.add_argument("--limit", type=float, default=900.0, help="longest a busy loop runs, s")
    parser.add_argument(
        "--warmup", type=float, default=60.0,
        help="seconds the busy loops run before the demo starts, so the 1-min load average has risen",
    )
    args = parser.parse_args()
    loops = [
        multiprocessing.Process(target=busy, args=(time.monotonic() + args.limit,), daemon=True)
        for _ in range(args.busy)
    ]
    for loop in loops:
        loop.start()
    if args.busy:
        time.sleep(args.warmup)
    work = Path(tempfile.mkdtemp(prefix="aka-demo-load-"))
    started = time.monotonic()
    demo = subprocess.Popen(
        [sys.executable, "-m", "aka_graph", "run", "--workspace", str(work)],
        cwd=work,
        stdout=(work / "demo.out").open("w"),
        stderr=(work / "demo.err").open("w"),
    )
    peak_one = peak_sum = peak_pss = 0.0
    loads = []
    while demo.poll() is None:
        pids = tree(demo.pid)
        sizes = [rss_mb(pid) for pid in pids]
        peak_pss = max(peak_pss, sum(pss_mb(pid) for pid in pids))
        peak_one, peak_sum = max(peak_one, max(sizes, default=0.0)), max(peak_sum, sum(sizes))
        loads.append(os.getloadavg()[0])
        time.sleep(0.2)
    wall = time.monotonic() - started
    for loop in loops:
        loop.terminate()
    (root,) = [p for p in work.iterdir() if p.name.startswith("kernel_opt_")] or [work]
    decisions = [
        json.loads(p.read_text())["decision"] for p in sorted((root / "memory").glob("v*.json"))
    ] if (root / "memory").is_dir() else []
    row = {
        "exit": demo.returncode,
        "wall_s": round(wall, 1),
        "peak_process_rss_mb": round(peak_one),
        "peak_tree_rss_mb": round(peak_sum),
        "peak_tree_pss_mb": round(peak_pss),
        "load1_mean": round(sum(loads) / max(len(loads), 1), 1),
        "load1_max": round(max(loads, default=0.0), 1),
        "busy_loops": args.busy,
        "decisions": decisions,
        "workdir": str(work),
    }
    print("| " + " | ".join(row) + " |")
    print("| " + " | ".join(str(v) for v in row.values()) + " |")
    ok = demo.returncode == 0 and "promoted" in decisions and "rejected" in decisions
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
