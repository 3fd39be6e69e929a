"""What glibc's malloc settings do to a host-timed call in a fresh process (round 27, issue 9).

Times a 170 x 4096 bf16 rmsnorm (the CPU subset's largest workload of the rmsnorm fixture), five calls a
round on five input sets, each after a flush of the CPU caches and timed by the thread's CPU clock, as the
harness times calls on a host: with glibc's defaults (`plain`), then with the harness's settings
(`steady`: timing.steady_host_allocator). Each mode in a fresh interpreter, as a worker starts.

    python3 benchmarks/host_allocator_calls.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ROUNDS = """
import sys, time, torch
sys.path.insert(0, {root!r})
from aka_graph.tools.evaluator.harness.timing import flush_host_caches, steady_host_allocator
torch.set_num_threads(1)
if sys.argv[1] == "steady":
    assert steady_host_allocator()
weight = torch.randn(4096, dtype=torch.bfloat16)
sets = [torch.randn(170, 4096, dtype=torch.bfloat16) for _ in range(5)]

def rmsnorm(x, w):
    v = x.float()
    v = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (v * w.float()).to(torch.bfloat16)

out = None
for r in range(3):
    samples = []
    for x in sets:
        flush_host_caches()
        out = None
        t0 = time.thread_time_ns()
        out = rmsnorm(x, weight)
        samples.append((time.thread_time_ns() - t0) / 1e3)
    print(" ".join(f"{{s:.0f}}" for s in samples))
"""


def main() -> int:
    print("| mode | round 1 (us a call) | round 2 | round 3 |")
    print("|---|---|---|---|")
    for mode in ("plain", "steady"):
        code = ROUNDS.format(root=str(ROOT))
        proc = subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            print(f"{mode}: failed: {proc.stderr[-500:]}")
            return 1
        rounds = proc.stdout.split("\n")[:3]
        print(f"| {mode} | " + " | ".join(rounds) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
