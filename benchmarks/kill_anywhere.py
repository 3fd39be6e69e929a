"""Kill a campaign at random moments, not only at the kill points the tests name, and check that every
resumed campaign ends with the records of an uninterrupted one.

The crash tests (`tests/test_resume.py`) kill a campaign at named progress events inside nodes. A
`kill -9` from outside lands anywhere: between a node's writes and its step's checkpoint, half-way
through creating the workspace, inside a git command. This script runs the test suite's deterministic
fake campaign (fake agent, fake evaluator, real graph, git, SQLite), kills it with SIGKILL after a random
delay (1 to 3 times per trial, each time re-running the same command), lets the last run finish, and
compares the records (memory/v*.json, ledger rows, git history and tree, tokens, state) with those of an
uninterrupted run. It prints one row per trial and exits 1 if any trial's records differ.

    python benchmarks/kill_anywhere.py --trials 40 [--seed 7]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from aka_graph.commands.status import campaign_status  # noqa: E402
from tests.test_resume import NODES_DIR, campaign_args, records  # noqa: E402


def start(tmp: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "AKA_GRAPH_CONTEXT_FACTORY": "campaign_fakes:make_context",
        "PYTHONPATH": os.pathsep.join([str(NODES_DIR), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "aka_graph", *campaign_args(tmp)],
        cwd=tmp,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def where(tmp: Path) -> str:
    """The interrupted campaign's state and next node(s), as `status` reads them."""
    try:
        rows = campaign_status(tmp / "ws")
    except Exception as e:  # a workspace a kill left unreadable is itself a finding
        return f"status failed: {type(e).__name__}: {e}"[:80]
    if not rows:
        return "no checkpoint"
    row = rows[0]
    return f"{row['state']} {','.join(row['next']) or '-'}"


def trial(tmp: Path, duration_s: float, rng: random.Random) -> tuple[list[str], str, int]:
    """Kill 1-3 times at random moments, then finish: (where each kill left it, final stderr, rc)."""
    seen = []
    for _ in range(rng.randint(1, 3)):
        proc = start(tmp)
        time.sleep(rng.uniform(0.0, duration_s))
        if proc.poll() is not None:
            seen.append("ended before the kill")
            break
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        seen.append(where(tmp))
    proc = start(tmp)
    _, err = proc.communicate(timeout=300)
    return seen, err.decode()[-20000:], proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep", type=Path, default=None, help="copy each failed trial's directory here")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="aka_kill_anywhere_") as base:
        whole = Path(base) / "whole"
        whole.mkdir()
        t0 = time.monotonic()
        proc = start(whole)
        _, err = proc.communicate(timeout=300)
        duration = time.monotonic() - t0
        if proc.returncode != 0:
            print(f"the uninterrupted run failed: {err.decode()[-2000:]}")
            return 1
        expected = records(whole)
        print(f"seed {seed}; uninterrupted run {duration:.1f} s; kills drawn in [0, {duration:.1f}] s\n")
        print(f"{'trial':>5}  {'result':<8}  where the kills left the campaign")
        failures = 0
        for n in range(args.trials):
            tmp = Path(base) / f"t{n}"
            tmp.mkdir()
            seen, err, rc = trial(tmp, duration, rng)
            if rc != 0:
                result, detail = "FAILED", err.strip().splitlines()[-1:] or [f"exit {rc}"]
            else:
                got = records(tmp)
                differing = sorted(k for k in expected if got.get(k) != expected[k])
                result, detail = ("ok", []) if not differing else ("DIFFERS", [f"differs in {differing}"])
            failures += result != "ok"
            if result != "ok" and args.keep is not None:
                shutil.copytree(tmp, args.keep / f"t{n}", symlinks=True)
                (args.keep / f"t{n}" / "stderr.txt").write_text(err)
            print(f"{n:>5}  {result:<8}  {' | '.join(seen + detail)}")
        print(f"\n{args.trials - failures}/{args.trials} trials ended with the uninterrupted records")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
