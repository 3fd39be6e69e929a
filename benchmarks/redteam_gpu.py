"""Red team round three on a GPU: every `redteam_*` candidate through the harness with `--device cuda`.

On a CPU the cheats are rejected by the source policy (tests/tools/evaluator/harness/test_redteam.py); this
shows the same on the device, plus what only a GPU can show: `redteam_gpu_slab_offset` (work skipped on the
CUDA-graph copies re-validation never replays, recognised by storage offsets; the source policy has nothing
to say about it) and the honest controls (`redteam_control_*`: real autotune sweeps, torch.library ops and
torch.compile on the device). Cheats should read REWARD_HACK or INCORRECT, controls PASS.

    python3 benchmarks/redteam_gpu.py [--fixtures DIR] [--out DIR]    # writes redteam_gpu.json there
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evaluator_gpu import ADV_SHAPES, CANDIDATES, REPO, _caught_by, evaluate


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--fixtures",
        type=Path,
        default=REPO / ".gpu" / "fixtures",
        help="the SOL-ExecBench fixtures (a directory holding rmsnorm/)",
    )
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args()
    names = sorted(p.name for p in CANDIDATES.glob("redteam_*"))
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.parallel) as pool:
        futures = {
            n: pool.submit(evaluate, args.fixtures / "rmsnorm", CANDIDATES / n, "cuda", 3, ADV_SHAPES, 600)
            for n in names
        }
        results = {n: f.result() for n, f in futures.items()}
    bad = []
    print(
        "| candidate | status | expected | latencies us | harness message |\n| --- | --- | --- | --- | --- |"
    )
    for n in names:
        r = results[n]
        honest = n.startswith("redteam_control_")
        # a timing dispute laid on other processes on the GPU (gpu_neighbours.py, a crowded run) is no PASS
        crowded = r["status"] == "INFRA_ERROR" and "held this GPU" in str(r.get("message", "")) + str(
            r.get("workloads", "")
        )
        ok = r["status"] == "PASS" if honest else r["status"] in ("REWARD_HACK", "INCORRECT") or crowded
        bad += [] if ok else [n]
        lat = ", ".join(f"{w.get('latency_us') or 0:.1f}" for w in r.get("workloads", []))
        print(
            f"| {n} | {r['status']} | {'PASS' if honest else 'rejected'}{'' if ok else ' (NOT MET)'} "
            f"| {lat} | {_caught_by(r)} |"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "redteam_gpu.json").write_text(json.dumps(results, indent=1, default=str))
    print(
        f"\n{len(names) - len(bad)} of {len(names)} as expected"
        + (f"; not met: {', '.join(bad)}" if bad else "")
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
