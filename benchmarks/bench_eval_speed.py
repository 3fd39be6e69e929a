"""Evaluation speed (issue 9, "Speed"): where the wall time of one evaluation goes, cold and campaign-like.

Rows (one table, raw result JSON under --out):
  floor      what every fresh process pays before the harness does anything: `import torch`, + CUDA
             context, + `import triton` (each a fresh interpreter); on a GPU also Triton's driver
             start, with a fresh cache (it builds its C helper, as every worker's fresh cache does) and a
             warm one: the difference is what a pre-built helper would save each evaluation
  cold k     `python -m aka_graph evaluate OP KERNEL --json`, k fresh processes (the user's command: its
             sandbox job, the harness's two processes); wall vs the harness's own total. The reference-
             timing store starts empty: run 1 measures the reference, later runs take it from the cache
  harness k  the harness as a job runs it (`python -m harness evaluate` in a fresh job directory) with a
             fresh reference-timing cache for k=1, the same cache afterwards (refcache.py)
  campaign   three different candidates in a row, as a campaign evaluates them (`aka_graph evaluate`, or
             the harness with --skip-cli): a fresh process each (fresh worker, fresh Triton/inductor
             caches, fresh seeds), the reference-timing cache warm from the cold runs
  warm k     (--warm) the campaign list twice through the warm evaluator, as a campaign now evaluates:
             one `serve` job in the LocalSandbox, a fresh worker and fresh seeds per candidate
For each run: status, wall, the harness's phases_s, where start-up went (timeline_s: when the worker had
torch, CUDA, Triton and was ready; when the parent had its CUDA context, reference and contract probe;
when the candidate was loaded), whether the reference latency came from the cache and how many MB of
outputs came back through the shared region (output_transfer).

Run on the H200 (from the repository root):
    python benchmarks/bench_eval_speed.py --out "$OUT/eval_speed"
On a CPU host (the Triton interpreter, the representative subset of workloads):
    python benchmarks/bench_eval_speed.py --device cpu --cold 1 --kernel rmsnorm_torch
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HARNESS = REPO / "aka_graph" / "tools" / "evaluator" / "harness"
CANDIDATES = REPO / "tests" / "tools" / "evaluator" / "harness" / "candidates"
OP = (REPO / ".." / "shared" / "fixtures" / "sol-execbench" / "rmsnorm").resolve()
CAMPAIGN = ["rmsnorm_triton", "rmsnorm_torch", "rmsnorm_torch_returning"]
TIMEOUT_S = 600
# the start-up points printed per run (timeline_s keys), in the order they usually happen
POINTS = [
    ("worker.torch_imported", "w.torch"),
    ("worker.cuda_ready", "w.cuda"),
    ("worker.triton_imported", "w.triton"),
    ("worker.ready", "w.ready"),
    ("parent.session_start", "p.torch"),
    ("parent.device_ready", "p.cuda"),
    ("parent.reference_loaded", "p.ref"),
    ("parent.contract_probed", "p.probe"),
    ("parent.flops_warmed_up", "p.flops"),
    ("parent.worker_ready_received", "p.got_ready"),
    ("parent.worker_candidate_loaded", "p.loaded"),
]


def wall(
    argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    return time.perf_counter() - t0, proc.returncode, proc.stdout + proc.stderr


def floor(device: str) -> list[tuple[str, float]]:
    """The fixed cost of a fresh process: what no harness change can remove (only a warm process can)."""
    steps = [("import torch", "import torch")]
    if device != "cpu":
        cuda = "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"
        steps.append(("+ CUDA context", cuda))
    steps.append(("+ import triton", steps[-1][1] + "; import triton"))
    out = [(name, wall([sys.executable, "-c", code])[0]) for name, code in steps]
    if device != "cpu":  # Triton's own C helper (driver.c -> cuda_utils.so), built into every fresh cache
        code = steps[-1][1] + "; triton.runtime.driver.active.get_current_device()"
        with tempfile.TemporaryDirectory(prefix="aka_speed_triton_") as cache:
            env = {**os.environ, "TRITON_CACHE_DIR": cache}
            out.append(("+ driver, fresh cache", wall([sys.executable, "-c", code], env=env)[0]))
            out.append(("+ driver, warm cache", wall([sys.executable, "-c", code], env=env)[0]))
    return out


def cli_run(kernel: Path, device: str, cache: Path, extra: list[str]) -> dict[str, Any]:
    """`python -m aka_graph evaluate OP KERNEL --json` (its own sandbox job, as the user runs it and as a
    campaign evaluates each candidate), the coordinator's reference-timing store in `cache`."""
    argv = [sys.executable, "-m", "aka_graph", "evaluate", str(OP), str(kernel), "--json", "--device", device]
    env = {**os.environ, "AKA_CACHE_DIR": str(cache)}
    seconds, rc, out = wall([*argv, *extra], env=env, cwd=REPO)
    try:
        res = json.loads(out[: out.rindex("}") + 1][out.index("{") :])
    except ValueError:
        res = {"status": f"NO_RESULT (exit {rc})", "message": out[-1500:]}
    res["_wall_s"] = seconds
    return res


def harness_run(kernel: Path, device: str, cache: Path, extra: list[str]) -> dict[str, Any]:
    """The harness as a sandbox job runs it: a fresh job directory, HOME and TMPDIR inside it."""
    with tempfile.TemporaryDirectory(prefix="aka_speed_job_") as tmp:
        job = Path(tmp)
        shutil.copytree(HARNESS, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(OP, job / "op")
        shutil.copytree(kernel, job / "kernel", ignore=shutil.ignore_patterns("__pycache__"))
        (job / "tmp").mkdir()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("AKA")},
            "HOME": str(job),
            "TMPDIR": str(job / "tmp"),
            "PYTHONPATH": ".",
            "AKA_CACHE_DIR": str(cache),
        }
        argv = [sys.executable, "-m", "harness", "evaluate", "--op-dir", "op", "--kernel-dir", "kernel"]
        argv += ["--out", "result.json", "--device", device, *extra]
        seconds, rc, out = wall(argv, env=env, cwd=job)
        try:
            res = json.loads((job / "result.json").read_text())
        except (OSError, ValueError):
            res = {"status": f"NO_RESULT (exit {rc})", "message": out[-1500:]}
    res["_wall_s"] = seconds
    return res


def warm_runs(kernels: list[Path], device: str, cache: Path, record: Any) -> None:
    """The campaign's path (warm.py): `evaluate_kernel(..., warm=True)` in the LocalSandbox, one service
    for all candidates. Before each candidate the bench waits until the service's spare worker is ready,
    as an agent's minutes of work would (the wait is printed, not counted)."""
    os.environ["AKA_CACHE_DIR"] = str(cache)
    from aka_graph.tools.evaluator import warm
    from aka_graph.tools.evaluator.evaluation import evaluate_kernel
    from aka_graph.tools.evaluator.sandbox.local import LocalSandbox

    sandbox = LocalSandbox()
    with tempfile.TemporaryDirectory(prefix="aka_speed_warm_") as tmp:
        for n, kernel in enumerate(kernels):
            waited = _wait_spare(warm)
            t0 = time.perf_counter()
            result = evaluate_kernel(sandbox, OP, kernel, Path(tmp) / str(n), device=device, warm=True)
            seconds = time.perf_counter() - t0
            res = json.loads((Path(tmp) / str(n) / "result.json").read_text())
            if not res.get("service"):
                res = {"status": f"COLD ({result.status})", "message": result.message, "phases_s": {}}
            res["_wall_s"] = seconds
            label = f"warm {n + 1} {kernel.name}"[:22]
            record(label, res)
            prepared = (res.get("service") or {}).get("references_prepared")
            print(
                f"    (waited {waited:.2f} s for the spare worker before sending it; "
                f"references prepared while idle: {prepared} workloads)"
            )
    warm.stop_all()


def _wait_spare(warm: Any, timeout_s: float = 60.0) -> float:
    t0 = time.perf_counter()
    services = list(warm._SERVICES.values())
    live = services[0].live if services else None
    while live is not None and time.perf_counter() - t0 < timeout_s:
        try:
            if json.loads((live.work / "spool" / "state.json").read_text()).get("spare_ready"):
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    return time.perf_counter() - t0


def row(label: str, res: dict[str, Any]) -> str:
    phases = res.get("phases_s") or {}
    total = phases.get("total")
    cache = res.get("reference_timing_cache") or {}
    transfer = res.get("output_transfer") or {}
    ref = "measured"
    if cache.get("cached_workloads"):
        ref = "cache"
    elif cache and not cache.get("used"):
        ref = "off"
    mb = transfer.get("shared_region_bytes", 0) / 2**20 if transfer else float("nan")
    cols = [f"{label:<22}", f"{str(res.get('status'))[:12]:<12}", f"{res['_wall_s']:7.2f}"]
    cols.append(f"{total:7.2f}" if total is not None else f"{'-':>7}")
    for key in ("imports", "startup", "correctness", "timing", "reference_timing"):
        cols.append(f"{phases[key]:6.2f}" if key in phases else f"{'-':>6}")
    cols += [f"{ref:>8}", f"{mb:8.1f}"]
    return " ".join(cols)


def timeline(res: dict[str, Any]) -> str:
    points = res.get("timeline_s") or {}
    return "    start-up (s since the command): " + "  ".join(
        f"{short} {points[key]:.2f}" for key, short in POINTS if key in points
    )


def spans(res: dict[str, Any]) -> str:
    """The parent's own steps (spans.py), largest first: where correctness and timing went."""
    got = res.get("spans_s") or {}
    ranked = sorted(got.items(), key=lambda kv: -kv[1]["s"])
    line = "    steps (s, times): " + "  ".join(f"{k} {v['s']:.2f}/{v['n']}" for k, v in ranked)
    worker = sorted((res.get("worker_spans_s") or {}).items(), key=lambda kv: -kv[1]["s"])
    if worker:  # the worker's own account (advisory)
        line += "\n    worker (s, times): " + "  ".join(f"{k} {v['s']:.2f}/{v['n']}" for k, v in worker)
    return line


HEADER = (
    f"{'run':<22} {'status':<12} {'wall_s':>7} {'harn_s':>7} {'import':>6} {'start':>6} {'correc':>6} "
    f"{'timing':>6} {'refti':>6} {'ref_lat':>8} {'shm_MB':>8}"
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    ap.add_argument("--kernel", default="rmsnorm_triton", help="candidate (harness candidates) for cold runs")
    ap.add_argument("--cold", type=int, default=3, help="fresh `aka_graph evaluate` processes")
    ap.add_argument("--campaign", nargs="*", default=CAMPAIGN, help="candidates evaluated in a row")
    ap.add_argument("--skip-cli", action="store_true", help="only the harness runs (no sandbox job)")
    ap.add_argument("--warm", action="store_true", help="also the campaign list, twice, through one service")
    ap.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="more harness flags, last")
    ap.add_argument("--out", type=Path, help="directory for the raw result JSON of every run")
    args = ap.parse_args()
    device = args.device
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    results: dict[str, Any] = {"device": device, "floor_s": {}, "runs": {}}
    print(f"operator {OP.name}, device {device}, kernel {args.kernel}, campaign {args.campaign}")
    for name, seconds in floor(device):
        results["floor_s"][name] = seconds
        print(f"floor: {name:<18} {seconds:6.2f} s (fresh interpreter)")
    print(HEADER)
    runs: list[tuple[str, dict[str, Any]]] = []

    def record(label: str, res: dict[str, Any]) -> None:
        runs.append((label, res))
        key, n = label, 1
        while key in results["runs"]:  # two campaign candidates of one name truncate alike
            n += 1
            key = f"{label} #{n}"
        results["runs"][key] = res
        print(row(label, res))
        print(timeline(res))
        print(spans(res))

    kernel = CANDIDATES / args.kernel
    with tempfile.TemporaryDirectory(prefix="aka_speed_cache_") as cache_dir:
        cache = Path(cache_dir)  # empty for the first run of each kind: its reference is measured
        if not args.skip_cli:
            for k in range(args.cold):
                record(f"cold {k + 1} (aka_graph)", cli_run(kernel, device, cache / "cli", args.extra))
            for name in args.campaign:
                res = cli_run(CANDIDATES / name, device, cache / "cli", args.extra)
                record(f"campaign {name}"[:22], res)
        for k in range(args.cold):
            record(f"harness {k + 1}", harness_run(kernel, device, cache / "harness", args.extra))
        if args.skip_cli:
            for name in args.campaign:
                res = harness_run(CANDIDATES / name, device, cache / "harness", args.extra)
                record(f"campaign {name}"[:22], res)
        if args.warm:
            warm_runs([CANDIDATES / name for name in args.campaign * 2], device, cache / "warm", record)
    for kind in ("campaign", "warm"):
        walls = [r["_wall_s"] for label, r in runs if label.startswith(kind)]
        if kind == "warm":
            walls = walls[1:]  # the first starts the service: a cold evaluation
        if walls:
            print(f"{kind}: median {statistics.median(walls):.2f} s, max {max(walls):.2f} s per candidate")
    bad = [label for label, r in runs if r.get("status") != "PASS"]
    if bad:
        print("NOT PASS: " + ", ".join(bad))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "eval_speed.json").write_text(json.dumps(results, indent=1, default=str))
        print(f"raw results: {args.out / 'eval_speed.json'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
