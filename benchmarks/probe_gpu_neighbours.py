"""Does the shared-GPU verdict work with the real driver? (round 17, on the H200)

`harness/gpu_neighbours.py` was unit-tested on a CPU host against a stand-in nvidia-smi. This asks the real
one: alone on the GPU, how many strangers does the parent see (must be 0: the parent's own context is not a
stranger); with an orphaned process holding a context (not in our process tree, as a user's other job is),
how many (must be 1); and what verdict an honest reference gets while that neighbour runs matmuls without
pause (PASS, or INFRA_ERROR naming the neighbour; REWARD_HACK is a false alarm).

    python3 benchmarks/probe_gpu_neighbours.py --problem .corpus/problems/004_gemm_n128_k2048 [--out p.json]

Prints one line per check and exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "aka_graph" / "tools" / "evaluator"))
sys.path.insert(0, str(REPO / "benchmarks"))

NEIGHBOUR = """
import os, sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
open(sys.argv[1], "w").write(str(os.getpid()))
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    for _ in range(20):
        a @ a
    if sys.argv[3] == "busy":
        torch.cuda.synchronize()
    else:
        time.sleep(0.2)
"""


def start_neighbour(seconds: float, mode: str, tmp: Path) -> int:
    """An orphan (its parent shell exits at once) holding a context: not below us, as another job is."""
    pidfile = tmp / f"neighbour_{mode}.pid"
    script = tmp / "neighbour.py"
    script.write_text(NEIGHBOUR)
    subprocess.run(
        ["bash", "-c", f"{sys.executable} {script} {pidfile} {seconds} {mode} >/dev/null 2>&1 &"],
        check=True,
        start_new_session=True,
    )
    for _ in range(200):
        if pidfile.exists() and pidfile.read_text().strip():
            return int(pidfile.read_text())
        time.sleep(0.1)
    raise RuntimeError("the neighbour never started")


def strangers_seen(device: int) -> int | None:
    from harness import gpu_neighbours

    return gpu_neighbours.others_on_gpu(gpu_neighbours.our_processes(), gpu_neighbours.device_uuid(device))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problem", type=Path, required=True, help="a corpus problem whose reference is timed")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    import torch
    from bench_evaluator_gpu import evaluate
    from bench_public_corpus import reference_kernel

    torch.zeros(1, device="cuda")
    report: dict[str, object] = {"alone": strangers_seen(0)}
    ok = report["alone"] == 0
    print(f"alone on the GPU: {report['alone']} stranger(s) (want 0)", flush=True)
    with tempfile.TemporaryDirectory(prefix="aka_neighbours_") as tmp:
        pid = start_neighbour(120, "busy", Path(tmp))
        try:
            seen = None
            for _ in range(50):  # the driver lists a context once it exists
                seen = strangers_seen(0)
                if seen:
                    break
                time.sleep(0.2)
            report["with_neighbour"] = seen
            ok &= seen == 1
            print(f"with a neighbour (pid {pid}): {seen} stranger(s) (want 1)", flush=True)
            kernel = reference_kernel(args.problem, Path(tmp) / "kernel")
            t0 = time.perf_counter()
            res = evaluate(args.problem, kernel, "cuda", 3, None, 240)
            status, message = res.get("status"), str(res.get("message", ""))
            report["verdict_beside_neighbour"] = {
                "status": status,
                "message": message[:600],
                "wall_s": round(time.perf_counter() - t0, 1),
            }
            ok &= status in ("PASS", "INFRA_ERROR") and (status == "PASS" or "other process" in message)
            print(f"{args.problem.name} beside it: {status} {message[:300]}", flush=True)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
    report["ok"] = bool(ok)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    print("probe", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
