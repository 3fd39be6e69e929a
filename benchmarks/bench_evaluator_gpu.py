"""GPU benchmark of the evaluator harness (issue 2, "What must be shown"), one device call, stdlib+torch.

Sections (run all by default; `--sections abe` picks some):
  a  whole `python -m harness evaluate` wall time, rmsnorm fixture, Triton candidate, --seeds 3
  c  the same evaluation in 5 fresh processes: per-workload CV of the reported latency (a reuses these)
  b  per-workload latency vs an independent measurement written here (own CUDA-graph replay over
     rotated input copies > 4x L2; and triton.testing.do_bench median with its L2 flush)
  d  native rms_norm operator (>= 50 shapes) with the Triton Model: whole evaluation wall time
  e  every adversarial candidate through the harness: all must be rejected
  f  the honest torch candidates of the other four SOL fixtures (gemma3's is too slow for CPU CI)
Each evaluation runs like a sandbox job: the harness copied as package `harness` into a fresh job
directory with the operator and kernel, HOME and TMPDIR inside it. Prints tables; raw JSON -> $OUT.

Numbers, not the gate (that is `python3 -m pytest -m gpu tests/gpu`), but never silently wrong: every
measured thing that misses its goal (an honest run not PASS, a CV or +-3 % goal missed, a cheat not
rejected, a section that crashed) is listed under PROBLEMS at the end and the exit status is 1.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PROBLEMS: list[str] = []  # what this run measured as wrong; non-empty -> exit status 1


def problem(text: str) -> None:
    PROBLEMS.append(text)
HARNESS = REPO / "aka_graph" / "tools" / "evaluator" / "harness"
CANDIDATES = REPO / "tests" / "tools" / "evaluator" / "harness" / "candidates"
NATIVE_OP = REPO / "benchmarks" / "operators" / "native_rms_norm"
NATIVE_CANDIDATE = REPO / "benchmarks" / "candidates" / "native_rms_norm_triton"
# Adversarial runs: a launch-bound, a middle and the largest workload (SOL bound bites on the big one).
ADV_SHAPES = ["33bf737d-3b37-4e38-be80-ea39b4b46ae6", "b010c7f2-801d-41c0-b5d0-be619ecb4090",
              "f0f508c3-e880-4ec8-b8be-1062db313d36"]
CPU_ADV_SHAPES = ["33bf737d-3b37-4e38-be80-ea39b4b46ae6"]


def evaluate(op_dir: Path, kernel_dir: Path, device: str, seeds: int = 3,
             shape_ids: list[str] | None = None, timeout_s: float = 300, settle_s: float = 0.0,
             profile: bool = False, env_extra: dict[str, str] | None = None) -> dict[str, Any]:
    """One harness evaluation in a fresh job dir; returns result.json plus wall time and exit code.
    `env_extra` joins the job's environment (CUDA_VISIBLE_DEVICES: which GPU it may see).
    With `settle_s`, result.json is read again that much later: a rewrite after exit is a forged verdict.
    With `profile`, the trusted parent runs under cProfile (top functions by cumulative time returned)."""
    with tempfile.TemporaryDirectory(prefix="aka_bench_job_") as tmp:
        job = Path(tmp)
        shutil.copytree(HARNESS, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(op_dir, job / "op")
        shutil.copytree(kernel_dir, job / "kernel", ignore=shutil.ignore_patterns("__pycache__"))
        (job / "tmp").mkdir()
        prof = ["-m", "cProfile", "-o", str(job / "parent.prof")] if profile else []
        argv = [sys.executable, *prof, "-m", "harness", "evaluate", "--op-dir", "op",
                "--kernel-dir", "kernel", "--out", "result.json", "--seeds", str(seeds), "--device", device]
        for sid in shape_ids or []:
            argv += ["--shape-id", sid]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(job), "TMPDIR": str(job / "tmp"),
               "PYTHONPATH": "."}
        if device == "cpu":
            env["TRITON_INTERPRET"] = "1"
        env.update(env_extra or {})
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(argv, cwd=job, env=env, capture_output=True, text=True, timeout=timeout_s)
            rc, stderr = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc, stderr = 124, str(exc.stderr or "")
        wall = time.perf_counter() - t0
        out = job / "result.json"
        try:
            written = out.read_text()
            result = json.loads(written)
        except (OSError, ValueError) as exc:
            written, result = "", {"status": "NO_RESULT", "message": f"{type(exc).__name__}: {exc}",
                                   "workloads": []}
        if settle_s:
            time.sleep(settle_s)
            later = out.read_text() if out.is_file() else ""
            if later != written:
                late = json.loads(later) if later else {}
                result["_rewritten_after_exit"] = f"{result['status']} -> {late.get('status')}"
                result["status"] = late.get("status", "NO_RESULT")  # what a coordinator would read
        if profile and (job / "parent.prof").is_file():
            import io
            import pstats

            text = io.StringIO()
            stats = pstats.Stats(str(job / "parent.prof"), stream=text).sort_stats("cumulative")
            stats.print_stats("harness/", 40)
            result["_profile"] = text.getvalue()[-6000:]
            text = io.StringIO()
            pstats.Stats(str(job / "parent.prof"), stream=text).sort_stats("tottime").print_stats(25)
            result["_profile_tottime"] = text.getvalue()[-5000:]
        result["_wall_s"], result["_rc"], result["_stderr_tail"] = wall, rc, stderr[-1500:]
        return result


def device_info() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__}
    try:
        import triton

        info["triton"] = triton.__version__
    except ImportError:
        info["triton"] = None
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        try:
            q = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu"
            info["nvidia_smi"] = subprocess.run(
                ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
                text=True, timeout=20).stdout.strip()
        except (OSError, subprocess.TimeoutExpired) as exc:
            info["nvidia_smi"] = f"unavailable: {exc}"
    return info


def copy_bandwidth_tbs() -> float:
    """Device-to-device copy rate (read + write bytes) of a 1 GiB buffer: the memory ceiling measured here."""
    import torch

    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        dst.copy_(src)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return 2 * src.numel() / statistics.median(times) / 1e12


def load_kernel(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("bench_candidate_kernel", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def independent_latency(run: Any, batch: int, hidden: int = 4096) -> dict[str, float]:
    """Our own measurement: CUDA graph of many calls rotating over input/output copies (> 4x L2 in all,
    so each call reads from HBM), replayed and timed with events; plus do_bench's median."""
    import torch
    import triton.testing

    bytes_per_call = 2 * batch * hidden * 2 + hidden * 2
    copies = max(2, min(512, math.ceil((256 << 20) / bytes_per_call)))
    calls = max(copies, 100) if bytes_per_call > (32 << 20) else max(copies, 400)
    gen = torch.Generator(device="cuda").manual_seed(batch)
    sets = [(torch.randn(batch, hidden, device="cuda", generator=gen).to(torch.bfloat16),
             torch.randn(hidden, device="cuda", generator=gen).to(torch.bfloat16),
             torch.empty(batch, hidden, device="cuda", dtype=torch.bfloat16)) for _ in range(copies)]
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for s in sets[:3]:
            run(*s)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            run(*sets[i % copies])
    graph.replay()
    torch.cuda.synchronize()
    samples = []
    for _ in range(15):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        samples.append(a.elapsed_time(b) * 1000 / calls)
    x, w, o = sets[0]
    bench = triton.testing.do_bench(lambda: run(x, w, o), warmup=25, rep=100, return_mode="median")
    del graph, sets
    return {"graph_rotated_us": statistics.median(samples), "do_bench_us": bench * 1000,
            "bytes": bytes_per_call}


def workloads(op_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (op_dir / "workload.jsonl").read_text().splitlines() if line.strip()]


def cv_pct(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values) * 100 if len(values) > 1 else 0.0


def wl_latencies(result: dict[str, Any]) -> dict[str, float | None]:
    return {w["id"]: w.get("latency_us") for w in result.get("workloads", [])}


def _phases(r: dict[str, Any]) -> str:
    return " ".join(f"{k} {v:.1f}" for k, v in (r.get("phases_s") or {}).items())


def section_ac(args: argparse.Namespace, raw: dict[str, Any]) -> None:
    op, kernel = args.fixtures / "rmsnorm", CANDIDATES / "rmsnorm_triton"
    shape_ids = CPU_ADV_SHAPES if args.device == "cpu" else None
    runs = [evaluate(op, kernel, args.device, seeds=3, shape_ids=shape_ids) for _ in range(args.processes)]
    raw["ac_runs"] = runs
    print("\n## (a) whole evaluation, rmsnorm fixture, Triton candidate, --seeds 3 (goal <= 6 s)")
    print("| process | status | workloads PASS | timing | wall s | harness phases s |\n"
          "| --- | --- | --- | --- | --- | --- |")
    for i, r in enumerate(runs):
        wl_pass = sum(w.get("status") == "PASS" for w in r.get("workloads", []))
        print(f"| {i + 1} | {r['status']} | {wl_pass}/{len(r.get('workloads', []))} "
              f"| {r.get('timing_method')} | {r['_wall_s']:.2f} | {_phases(r)} |")
        if r["status"] != "PASS":
            problem(f"(a) process {i + 1}: honest Triton rmsnorm {r['status']}")
            print(f"    message: {r.get('message', '')[:300]} rc={r['_rc']} {r['_stderr_tail'][-600:]}")
    walls = [r["_wall_s"] for r in runs]
    print(f"wall: first (cold Triton cache) {walls[0]:.2f} s, median {statistics.median(walls):.2f} s, "
          f"max {max(walls):.2f} s")
    print(f"\n## (c) run-to-run spread over {len(runs)} fresh processes "
          "(goal CV <= 1% >= 10 us, <= 3% below)")
    print("| workload | batch | median us | min | max | CV % | goal met |\n"
          "| --- | --- | --- | --- | --- | --- | --- |")
    batch = {w["uuid"]: w["axes"]["batch_size"] for w in workloads(op)}
    per = [wl_latencies(r) for r in runs]
    for wid in sorted(per[0], key=lambda k: batch.get(k, 0)):
        vals = [p[wid] for p in per if p.get(wid)]
        if len(vals) < 2:
            problem(f"(c) workload {wid[:8]}: fewer than 2 latencies")
            print(f"| {wid[:8]} | {batch.get(wid)} | - | - | - | - | no data |")
            continue
        med, cv = statistics.median(vals), cv_pct(vals)
        goal = 1.0 if med >= 10 else 3.0
        if cv > goal:
            problem(f"(c) workload {wid[:8]}: CV {cv:.2f}% > {goal:g}%")
        print(f"| {wid[:8]} | {batch.get(wid)} | {med:.2f} | {min(vals):.2f} | {max(vals):.2f} | {cv:.2f} "
              f"| {'yes' if cv <= goal else 'NO'} |")


def section_b(args: argparse.Namespace, raw: dict[str, Any]) -> None:
    import torch

    if not torch.cuda.is_available():
        print("\n## (b) skipped: needs CUDA")
        return
    op = args.fixtures / "rmsnorm"
    runs = raw.get("ac_runs") or [evaluate(op, CANDIDATES / "rmsnorm_triton", "cuda")]
    per = [wl_latencies(r) for r in runs]
    run = load_kernel(CANDIDATES / "rmsnorm_triton" / "kernel.py").run
    bw = copy_bandwidth_tbs()
    raw["copy_bandwidth_tbs"] = bw
    rows = []
    print(f"\n## (b) harness latency vs independent measurement (goal within +-3% for >= 10 us); "
          f"copy rate measured {bw:.2f} TB/s")
    print("| batch | harness us (median of runs) | own graph+rotation us | diff % | do_bench us | "
          "achieved TB/s | util vs copy % | harness util % | goal met |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    util = {w["id"]: w.get("utilization_pct") for w in runs[0].get("workloads", [])}
    for w in sorted(workloads(op), key=lambda w: w["axes"]["batch_size"]):
        wid, b = w["uuid"], w["axes"]["batch_size"]
        ind = independent_latency(run, b)
        vals = [p[wid] for p in per if p.get(wid)]
        h = statistics.median(vals) if vals else float("nan")
        diff = (h - ind["graph_rotated_us"]) / ind["graph_rotated_us"] * 100
        tbs = ind["bytes"] / (ind["graph_rotated_us"] * 1e-6) / 1e12
        ok = "n/a (<10 us)" if ind["graph_rotated_us"] < 10 else ("yes" if abs(diff) <= 3 else "NO")
        if ok == "NO" or math.isnan(h):
            problem(f"(b) batch {b}: harness {h:.2f} us vs independent {ind['graph_rotated_us']:.2f} us")
        rows.append({"id": wid, "batch": b, "harness_us": h, **ind, "diff_pct": diff,
                     "harness_util_pct": util.get(wid)})
        hu = util.get(wid)
        print(f"| {b} | {h:.2f} | {ind['graph_rotated_us']:.2f} | {diff:+.2f} | {ind['do_bench_us']:.2f} | "
              f"{tbs:.2f} | {tbs / bw * 100:.1f} | {'-' if hu is None else f'{hu:.1f}'} | {ok} |")
    raw["b_rows"] = rows


def section_d(args: argparse.Namespace, raw: dict[str, Any]) -> None:
    shapes = json.loads((NATIVE_OP / "shapes.json").read_text())
    ids = ["t5_h512_bf16", "t64_h4096_fp16"] if args.device == "cpu" else None
    r = evaluate(NATIVE_OP, NATIVE_CANDIDATE, args.device, seeds=3, shape_ids=ids, timeout_s=400)
    raw["d_native"] = r
    passed = sum(w.get("status") == "PASS" for w in r.get("workloads", []))
    print(f"\n## (d) native rms_norm, {len(r.get('workloads', []))} of {len(shapes)} shapes, Triton Model, "
          f"--seeds 3 (goal <= 30 s for >= 50 shapes)")
    print(f"status {r['status']}, {passed} workloads PASS, wall {r['_wall_s']:.2f} s, timing "
          f"{r.get('timing_method')}, phases {_phases(r)}")
    if r["status"] != "PASS":
        problem(f"(d) native rms_norm: {r['status']}")
        print(f"    message: {r.get('message', '')[:400]} rc={r['_rc']} {r['_stderr_tail'][-600:]}")
    lat = [w["latency_us"] for w in r.get("workloads", []) if w.get("latency_us")]
    if lat:
        print(f"latency range {min(lat):.2f}-{max(lat):.2f} us, geomean "
              f"{math.exp(sum(map(math.log, lat)) / len(lat)):.2f} us")


def _caught_by(r: dict[str, Any]) -> str:
    msgs = [r.get("message", "")] + [w.get("message", "") for w in r.get("workloads", [])]
    text = " | ".join(m for m in msgs if m)
    return text.replace("\n", " ")[:220]


def section_e(args: argparse.Namespace, raw: dict[str, Any]) -> None:
    op = args.fixtures / "rmsnorm"
    names = [*sorted(p.name for p in CANDIDATES.glob("adv_*")), "rmsnorm_torch", "rmsnorm_triton"]
    shape_ids = CPU_ADV_SHAPES if args.device == "cpu" else ADV_SHAPES
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.parallel) as pool:
        futures = {n: pool.submit(evaluate, op, CANDIDATES / n, args.device, 3, shape_ids, 240, 1.0)
                   for n in names}
        results = {n: f.result() for n, f in futures.items()}
    raw["e_adversarial"] = results
    print(f"\n## (e) adversarial candidates on rmsnorm ({len(shape_ids)} workloads, "
          f"{args.parallel} at a time)")
    print("| candidate | status | verdict | workloads PASS | wall s | caught by (harness message) |\n"
          "| --- | --- | --- | --- | --- | --- |")
    for n in names:
        r = results[n]
        honest = not n.startswith("adv_")
        if honest:
            verdict = "ok (honest passes)" if r["status"] == "PASS" else "HONEST REJECTED"
        elif r["status"] == "NO_RESULT":
            verdict = "no verdict (coordinator: INFRA_ERROR)"
        else:
            verdict = "rejected" if r["status"] in ("REWARD_HACK", "INCORRECT") else "NOT REJECTED"
        wl_pass = sum(w.get("status") == "PASS" for w in r.get("workloads", []))
        late = f" REWRITTEN AFTER EXIT {r['_rewritten_after_exit']}" if r.get("_rewritten_after_exit") else ""
        if verdict in ("NOT REJECTED", "HONEST REJECTED") or late:
            problem(f"(e) {n}: {r['status']}{late} ({verdict})")
        print(f"| {n} | {r['status']}{late} | {verdict} | {wl_pass}/{len(r.get('workloads', []))} "
              f"| {r['_wall_s']:.1f} | {_caught_by(r)} |")


HONEST_FIXTURES = {
    "nemotron_rms_norm": "nemotron_rms_norm_torch",
    "flux_rope": "flux_rope_torch",
    "gemma3_swiglu": "gemma3_swiglu_torch",
    "custom_inputs_matmul": "custom_inputs_matmul_torch",
}


def section_f(args: argparse.Namespace, raw: dict[str, Any]) -> None:
    print("\n## (f) honest candidates on the other SOL fixtures (all workloads, --seeds 3)")
    print("| fixture | status | workloads PASS | wall s | latencies us |\n| --- | --- | --- | --- | --- |")
    raw["f_fixtures"] = {}
    for fixture, cand in HONEST_FIXTURES.items():
        r = evaluate(args.fixtures / fixture, CANDIDATES / cand, args.device, seeds=3, timeout_s=400)
        raw["f_fixtures"][fixture] = r
        lat = ", ".join(f"{w['latency_us']:.1f}" for w in r.get("workloads", []) if w.get("latency_us"))
        wl_pass = sum(w.get("status") == "PASS" for w in r.get("workloads", []))
        print(f"| {fixture} | {r['status']} | {wl_pass}/{len(r.get('workloads', []))} | {r['_wall_s']:.1f} "
              f"| {lat} |")
        if r["status"] != "PASS":
            problem(f"(f) {fixture}: honest {cand} {r['status']}")
            print(f"    message: {r.get('message', '')[:300]}")


def section_p(args: argparse.Namespace, raw: dict[str, Any]) -> None:
    """Where the whole-evaluation wall time goes: the trusted parent under cProfile (cumulative)."""
    r = evaluate(args.fixtures / "rmsnorm", CANDIDATES / "rmsnorm_triton", args.device, seeds=3,
                 shape_ids=CPU_ADV_SHAPES if args.device == "cpu" else None, profile=True)
    raw["p_profile"] = r.get("_profile")
    print(f"\n## (p) profile of one whole evaluation (status {r['status']}, wall {r['_wall_s']:.2f} s)")
    print(r.get("_profile", "no profile written"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixtures", type=Path, default=REPO / ".gpu" / "fixtures",
                        help="folder holding the SOL fixtures (rmsnorm/); copy "
                             "../shared/fixtures/sol-execbench into .gpu/fixtures and carry .gpu")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--sections", default="acbdef")
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))
    args = parser.parse_args()
    if not (args.fixtures / "rmsnorm" / "definition.json").is_file():
        parser.error(f"{args.fixtures}/rmsnorm not found: copy the SOL fixtures there (see --fixtures)")
    raw: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "info": device_info()}
    print(f"# evaluator benchmark {raw['date']}\n{json.dumps(raw['info'])}")
    steps = {"a": section_ac, "c": section_ac, "b": section_b, "d": section_d, "e": section_e,
             "f": section_f, "p": section_p}
    done: set[Any] = set()
    for key in args.sections:
        step = steps[key]
        if step in done:
            continue
        done.add(step)
        t0 = time.perf_counter()
        try:
            step(args, raw)
        except Exception as exc:  # keep the other sections' numbers, but the run fails
            import traceback

            problem(f"section {key} crashed: {type(exc).__name__}: {exc}")
            print(f"\nsection {key} failed: {type(exc).__name__}: {exc}\n{traceback.format_exc()[-1500:]}")
        print(f"(section {key}: {time.perf_counter() - t0:.1f} s)")
        args.out.mkdir(parents=True, exist_ok=True)
        raw["problems"] = PROBLEMS
        (args.out / "bench_evaluator.json").write_text(json.dumps(raw, indent=1, default=str))
    print("\nPROBLEMS:\n" + "\n".join(f"- {p}" for p in PROBLEMS) if PROBLEMS else "\nno problems measured")
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    raise SystemExit(main())
