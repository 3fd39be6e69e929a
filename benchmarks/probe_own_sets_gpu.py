"""Red team round 27's h01 on a GPU: the padded-batch operator (`r27_padded_bimodal`, its valid rows follow
the seed, every shape fixed) evaluated with its bench seed forced to the rare long batch and to the usual
short one, for two honest kernels: the reference itself (it reads the valid count on the host, so its calls
are timed by CUDA events, one fresh set each) and a Triton kernel that reads the count on the device (a CUDA
graph captures it; its replays rotate over copies holding fresh sets). An honest kernel's speed-up should not
move with the bench seed. Prints a table.

Run (on the GPU, from the repo root): python3 benchmarks/probe_own_sets_gpu.py [--repeat N]"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.tools.evaluator.harness.test_redteam_round27 import (
    HEAVY_EVERY,
    evaluate_with_bench_seed,
    honest_source,
    padded_fixture,
    speedups,
)

TRITON = Path(__file__).resolve().parents[1] / "tests/gpu/candidates/honest27_padded_triton_early_exit"
BENCH_SEEDS = {"long": 7 * HEAVY_EVERY, "usual": 7 * HEAVY_EVERY + 1}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="evaluations per kernel and bench seed")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rows", type=int, default=1 << 19, help="the padded buffer's rows (N)")
    args = parser.parse_args()
    kernels = {"reference (events)": honest_source(), "triton (graph)": (TRITON / "kernel.py").read_text()}
    head = f"{'kernel':20} {'bench':6} {'status':8} {'wall_s':>7} {'lat_us':>9} {'ref_us':>9} {'speedup':>8}"
    print(head + "  methods")
    for name, source in kernels.items():
        for bench, seed in BENCH_SEEDS.items():
            for _ in range(args.repeat):
                tmp = Path(tempfile.mkdtemp(prefix="own_sets_"))
                t0 = time.perf_counter()
                op = padded_fixture(tmp, args.rows)
                res = evaluate_with_bench_seed(tmp, op, source, seed, device=args.device)
                wall = time.perf_counter() - t0
                w = res["workloads"][0] if res.get("workloads") else {}
                ratio = statistics.median(speedups(res)) if res["status"] == "PASS" else float("nan")
                methods = f"{w.get('timing_method')} / {w.get('reference_timing_method')}"
                print(
                    f"{name:20} {bench:6} {res['status']:8} {wall:7.1f} {w.get('latency_us') or 0:9.2f} "
                    f"{w.get('reference_latency_us') or 0:9.2f} {ratio:8.2f}  {methods}",
                    flush=True,
                )
                if res["status"] != "PASS":
                    print("   ", res["message"][:300])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
