"""The demo campaign on a loaded host: no false REWARD_HACK (issues 9 class 4, 13).

Starts `--busy` busy-loop processes (each bounded in time, killed at the end), then runs the demo
(`python -m aka_graph run` in a fresh temporary directory) `--runs` times in a row, and prints one row
per run: the load average seen, the exit status, and every REWARD_HACK the campaign recorded (its
ledger, memory and report). On a 2-core host, 3-4 busy loops give a load of 3-5.

    python3 benchmarks/demo_under_load.py --runs 5 --busy 3
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUSY = "import time\nend = time.monotonic() + {secs}\nwhile time.monotonic() < end:\n    pass\n"


def reward_hacks(root: Path) -> list[str]:
    """Every line of the campaign's records, memory and report that names a REWARD_HACK verdict."""
    found = []
    for path in root.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".md", ".txt", ".jsonl", ".log"):
            text = path.read_text(errors="replace")
            found += [f"{path.name}: {m.group(0)[:160]}" for m in re.finditer(r"REWARD_HACK[^\n]*", text)]
        elif path.is_file() and path.suffix == ".sqlite":
            text = path.read_bytes().decode(errors="replace")
            found += [f"{path.name}: {m.group(0)[:160]}" for m in re.finditer(r"REWARD_HACK[ -~]*", text)]
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--busy", type=int, default=3, help="busy-loop processes (load)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="per demo run, seconds")
    args = ap.parse_args()
    budget = args.runs * args.timeout + 60
    loops = [
        subprocess.Popen([sys.executable, "-c", BUSY.format(secs=budget)]) for _ in range(args.busy)
    ]
    rows, bad = [], 0
    try:
        time.sleep(5)  # let the load average climb
        for run in range(1, args.runs + 1):
            with tempfile.TemporaryDirectory(prefix="aka_demo_load_") as tmp:
                t0 = time.monotonic()
                env = {**os.environ, "PYTHONPATH": str(REPO)}
                proc = subprocess.run(
                    [sys.executable, "-m", "aka_graph", "run"], cwd=tmp, env=env, capture_output=True,
                    text=True, timeout=args.timeout,
                )
                load = os.getloadavg()[0]
                hacks = reward_hacks(Path(tmp))
                bad += bool(hacks)
                rows.append((run, load, proc.returncode, time.monotonic() - t0, hacks))
                print(f"run {run}: load {load:.1f}, exit {proc.returncode}, {time.monotonic() - t0:.0f} s, "
                      f"REWARD_HACK: {len(hacks)}", flush=True)
                for line in hacks[:5]:
                    print("   ", line, flush=True)
                if proc.returncode != 0:
                    print(proc.stderr[-2000:], flush=True)
    finally:
        for p in loops:
            p.kill()
            p.wait()
    print("\n| run | load (1 min) | exit | wall s | false REWARD_HACK |")
    print("|---|---|---|---|---|")
    for run, load, code, wall, hacks in rows:
        print(f"| {run} | {load:.1f} | {code} | {wall:.0f} | {len(hacks)} |")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
