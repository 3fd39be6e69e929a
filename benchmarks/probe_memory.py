"""Which process holds the GPU's memory when, during one evaluation (issue 9, class 2, on the H200)

A real problem's own reference ran out of memory alone on the H200 (round 17: a decoder block at 2 x 8192
tokens, an attention backward at 32 x 80 x 691 x 773). The out-of-memory message names one moment; this
puts the driver's per-process memory (nvidia-smi, every POLL_S) beside the trusted parent's spans (their
start and end, AKA_SPAN_TRACE) so the peak of each process can be read against what the parent was doing.

    python3 benchmarks/probe_memory.py --problem .corpus/problems/002_decoder_layer_full_block \
        [--shape-id 745585e3] [--out memory.json]

Prints the verdict, each process's peak, and the spans with the memory each process held during them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

POLL_S = 0.1


def poll(samples: list[tuple[float, dict[int, int]]], stop: threading.Event) -> None:
    """(time, {pid: MiB used}) from nvidia-smi until `stop`."""
    query = ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"]
    while not stop.is_set():
        out = subprocess.run(query, capture_output=True, text=True).stdout
        row = {}
        for line in out.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                row[int(parts[0])] = int(parts[1])
        samples.append((time.time(), row))
        stop.wait(POLL_S)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problem", type=Path, required=True)
    ap.add_argument("--shape-id", action="append", default=[], help="only these workloads (a uuid prefix)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    from bench_evaluator_gpu import evaluate
    from bench_public_corpus import reference_kernel

    samples: list[tuple[float, dict[int, int]]] = []
    stop = threading.Event()
    with tempfile.TemporaryDirectory(prefix="aka_memprobe_") as tmp:
        trace = Path(tmp) / "spans.txt"
        kernel = reference_kernel(args.problem, Path(tmp) / "kernel")
        poller = threading.Thread(target=poll, args=(samples, stop), daemon=True)
        poller.start()
        t0 = time.time()
        res = evaluate(
            args.problem,
            kernel,
            "cuda",
            3,
            args.shape_id or None,
            300,
            env_extra={"AKA_SPAN_TRACE": str(trace)},
        )
        stop.set()
        poller.join()
        spans = []
        for line in trace.read_text().splitlines() if trace.exists() else []:
            pid, start, end, name = line.split(" ", 3)
            spans.append((int(pid), float(start), float(end), name))
    parent = spans[0][0] if spans else None
    peaks: dict[int, int] = {}
    for _, row in samples:
        for pid, mib in row.items():
            peaks[pid] = max(peaks.get(pid, 0), mib)
    role = {pid: "parent" if pid == parent else "other (worker)" for pid in peaks}
    print(f"{args.problem.name}: {res.get('status')} {str(res.get('message', ''))[:400]}")
    for w in res.get("workloads", []):
        print(f"  {w['id'][:12]} {w['status']} {w.get('timing_method')} {str(w.get('message', ''))[:200]}")
    for pid, mib in sorted(peaks.items()):
        print(f"peak {role[pid]:>15} pid {pid}: {mib / 1024:.1f} GiB")
    rows = []
    for _pid, start, end, name in spans:
        held: dict[int, int] = {}
        for t, row in samples:
            if start - POLL_S <= t <= end + POLL_S:
                for p, mib in row.items():
                    held[p] = max(held.get(p, 0), mib)
        rows.append(
            {
                "name": name,
                "start_s": round(start - t0, 2),
                "took_s": round(end - start, 2),
                "max_gib": {role.get(p, str(p)): round(m / 1024, 1) for p, m in held.items()},
            }
        )
    for r in rows:
        if r["took_s"] >= 0.05 or r["name"] in ("timing.park", "timing.revalidation_reference"):
            print(f"  {r['start_s']:7.2f} +{r['took_s']:6.2f} s {r['name']:<34} {r['max_gib']}")
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "result": {k: res.get(k) for k in ("status", "message")},
                    "peaks_gib": {f"{role[p]} {p}": m / 1024 for p, m in peaks.items()},
                    "spans": rows,
                    "samples": [(round(t - t0, 2), r) for t, r in samples],
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
