"""Where a real problem's evaluation spends its time (issue 9, Speed): each named corpus problem's own
reference evaluated as a job runs it, the trusted parent under cProfile, and printed: the phases, every
span of either process over 50 ms, and the parent's functions by cumulative and by own time.

    python3 benchmarks/profile_corpus.py --device cuda 021_rmsnorm_h128 016_fp8_multi_latent  > prof.txt

The worker cannot be profiled (it refuses a tracer); its `w.*` spans say where its time goes."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evaluator_gpu import evaluate
from bench_public_corpus import CORPUS, reference_kernel


def spans(res: dict, floor_s: float = 0.05) -> str:
    rows = []
    for key in ("spans_s", "worker_spans_s"):
        for name, v in (res.get(key) or {}).items():
            if isinstance(v, dict) and float(v.get("s", 0.0)) >= floor_s:
                rows.append((float(v["s"]), name, v.get("n")))
    return "\n".join(f"  {s:8.3f} s  n={n!s:>5}  {name}" for s, name, n in sorted(rows, reverse=True))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problems", nargs="+", help="corpus problem names (exact directory names)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    for name in args.problems:
        problem = CORPUS / "problems" / name
        with tempfile.TemporaryDirectory(prefix="aka_prof_") as tmp:
            kernel = reference_kernel(problem, Path(tmp) / "kernel")
            t0 = time.perf_counter()
            res = evaluate(problem, kernel, args.device, 3, None, args.timeout, profile=True)
            wall = time.perf_counter() - t0
        count = len(res.get("workloads") or [])
        print(f"===== {name}: {res.get('status')} wall {wall:.1f} s, {count} workloads")
        print(f"phases {res.get('phases_s')}\nmessage {str(res.get('message'))[:300]}")
        print(spans(res))
        print(res.get("_profile", "(no profile)")[-5000:])
        tot = res.get("_profile_tottime")
        if tot:
            print(tot)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
