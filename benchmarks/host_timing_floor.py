"""How far a host-timed candidate reads from its reference when it *is* the reference (CPU; issue 9).

An operator's own reference is evaluated as the candidate, `--runs` times, each in a fresh harness job on
the CPU; the table gives, per workload, the candidate's latency over the reference's in every run. An
honest measurement reads about 1 everywhere; round 26 saw 2-3 on calls of 6-26 us. Round 27 found the
cause (the worker's calls ran after its untimed checks with cold caches, the parent's reference calls
warm) and times both from cold caches now (timing.flush_host_caches).

    python3 benchmarks/host_timing_floor.py ../shared/fixtures/sol-execbench/rmsnorm --runs 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_evaluator_gpu import evaluate
from bench_public_corpus import reference_kernel


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("op_dir", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--shape-id", action="append", dest="shape_ids", help="only these workloads")
    args = ap.parse_args()
    if not (args.op_dir / "definition.json").is_file():
        print(f"error: {args.op_dir} holds no definition.json; pass an operator directory", file=sys.stderr)
        return 2
    ratios: dict[str, list[float]] = {}
    latencies: dict[str, list[tuple[float, float]]] = {}
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="aka_floor_") as tmp:
            kernel = reference_kernel(args.op_dir, Path(tmp) / "kernel")
            res = evaluate(args.op_dir, kernel, "cpu", 1, args.shape_ids, 900)
        if res.get("status") != "PASS":
            print(f"run {run}: {res.get('status')} {str(res.get('message'))[:300]}")
            continue
        for w in res["workloads"]:
            got, ref = w.get("latency_us"), w.get("reference_latency_us")
            if got and ref:
                ratios.setdefault(w["id"], []).append(got / ref)
                latencies.setdefault(w["id"], []).append((got, ref))
    print(f"| workload | reference us (median) | candidate / reference, {args.runs} runs | median |")
    print("|---|---|---|---|")
    for wid, rs in ratios.items():
        ref_us = statistics.median(r for _, r in latencies[wid])
        cells = ", ".join(f"{r:.2f}" for r in rs)
        print(f"| {wid[:8]} | {ref_us:.1f} | {cells} | {statistics.median(rs):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
