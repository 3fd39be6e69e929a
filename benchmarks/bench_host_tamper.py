"""Host timing's tamper check on a loaded host: honest kernels pass, a faked clock is caught (hostclock.py).

Runs the harness's `compare` on the rmsnorm fixture's two smallest workloads with two kernels from
tests/tools/evaluator/harness/test_guards.py: the honest control and `frame_walk_timer`, which walks the
stack to the worker's timing loop and moves its start time forward (its own readings come out at about
half the call). Each trial is a fresh job; `--busy` busy loops run alongside for the loaded rows. One
row per load: the verdicts over all trials and the latencies the parent measured.

    python3 benchmarks/bench_host_tamper.py --trials 8 --busy 0 3
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.tools.evaluator.harness.test_guards import run_cheats  # noqa: E402

BUSY = "import time\nend = time.monotonic() + {secs}\nwhile time.monotonic() < end:\n    pass\n"
KERNELS = ("honest", "frame_walk_timer")


def trial() -> dict[str, tuple[str, list[float]]]:
    """One compare run: each kernel's status and its workloads' latencies (us)."""
    verdicts = run_cheats(Path(tempfile.mkdtemp(prefix="aka_tamper_")), list(KERNELS))
    return {
        name: (r["status"], [w["latency_us"] for w in r["workloads"] if w.get("latency_us") is not None])
        for name, r in verdicts.items()
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--busy", type=int, nargs="+", default=[0, 3], help="busy loops per row")
    args = ap.parse_args()
    print(f"{'busy':>4} {'load':>5}  {'honest':<22} {'frame_walk_timer':<26} honest us  fake us")
    for busy in args.busy:
        loops = [
            subprocess.Popen([sys.executable, "-c", BUSY.format(secs=60 * args.trials)]) for _ in range(busy)
        ]
        try:
            time.sleep(2 if busy else 0)
            verdicts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
            latencies: dict[str, list[float]] = collections.defaultdict(list)
            for _ in range(args.trials):
                for name, (status, lat) in trial().items():
                    verdicts[name][status] += 1
                    latencies[name] += lat
            load = os.getloadavg()[0]
        finally:
            for p in loops:
                p.kill()
                p.wait()
        trials = args.trials
        cells = {n: ", ".join(f"{k} {v}/{trials}" for k, v in sorted(verdicts[n].items())) for n in KERNELS}
        meds = {n: f"{statistics.median(latencies[n]):.1f}" if latencies[n] else "-" for n in KERNELS}
        print(
            f"{busy:>4} {load:>5.1f}  {cells['honest']:<22} {cells['frame_walk_timer']:<26} "
            f"{meds['honest']:>9} {meds['frame_walk_timer']:>8}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
