"""Issue 10's acceptance set on the GPU: every language's example solution (tests/fixtures/solutions)
evaluated by our evaluator (the GPU-side harness, as a sandbox job runs it) and, when its source is
given, by the SOL-ExecBench CLI in the same run on the same machine; prints a table (status, geomean
latency of both, their ratio, wall time of both) and writes the raw results under --out.

    python3 benchmarks/bench_languages_gpu.py [--sol-cli SOL_SRC] [--sol-site SITE] [--out DIR] [--only NAME]
                                              [--jobs N]

SOL_SRC: the directory holding the `sol_execbench` package (a fetched SOL-ExecBench checkout's `src/`);
SITE: extra PYTHONPATH with its dependencies (default /tmp/sol-site when it exists). Without --sol-cli, or
when its package does not import, the side-by-side columns are left empty and say why.

--jobs N: N solutions at a time (each: ours, then the CLI). The C++ builds (60-90 s each on the H200, on
both sides) then overlap, and the whole set fits one device call (serially it is ~15 min); but the timed
phases of two solutions may overlap too, so the latencies are indicative (the table says so). For exact
side-by-side figures use --jobs 1 with --only (a few solutions per call).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fixtures.solutions.acceptance import Solution, solutions  # noqa: E402

HARNESS = REPO / "aka_graph" / "tools" / "evaluator" / "harness"


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def ours(sol: Solution, work: Path) -> dict[str, Any]:
    job = work / f"ours_{sol.name}"
    shutil.copytree(HARNESS, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(sol.op_dir, job / "op")
    shutil.copytree(sol.kernel_dir, job / "kernel", ignore=shutil.ignore_patterns("__pycache__"))
    # the job's own directory first, then the session's PYTHONPATH (the kit's nvidia-cutlass, a CuTe DSL)
    paths = [".", os.environ.get("PYTHONPATH", "")]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    argv = [sys.executable, "-m", "harness", "evaluate", "--op-dir", "op", "--kernel-dir", "kernel"]
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*argv, "--out", "result.json", "--device", "cuda"],
        cwd=job,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    wall = time.perf_counter() - t0
    try:
        res = json.loads((job / "result.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {"status": "NO_RESULT", "message": proc.stderr[-1500:], "wall_s": wall, "latency_us": {}}
    lat = {w["id"]: w["latency_us"] for w in res["workloads"] if w.get("latency_us")}
    return {
        "status": res["status"],
        "message": res["message"][:1500],
        "wall_s": wall,
        "latency_us": lat,
        "timing_method": res["timing_method"],
        "phases_s": res.get("phases_s"),
    }


def sol_cli_env(sol_src: Path | None, sol_site: Path | None) -> tuple[dict[str, str] | None, str]:
    if sol_src is None:
        return None, "no --sol-cli given"
    paths = [str(p) for p in (sol_site, sol_src) if p is not None] + [os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ) | {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    probe = subprocess.run(
        [sys.executable, "-c", "import sol_execbench.cli.main"], env=env, capture_output=True, text=True
    )
    if probe.returncode != 0:
        return None, f"sol_execbench does not import: {probe.stderr.strip().splitlines()[-1:]}"
    return env, ""


def theirs(sol: Solution, env: dict[str, str], work: Path) -> dict[str, Any]:
    solution_json = work / f"sol_{sol.name}.json"
    solution_json.write_text(json.dumps(sol.inlined()))
    code = "import sys; from sol_execbench.cli.main import cli; sys.argv[0] = 'sol-execbench'; cli()"
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code, str(sol.op_dir), "--solution", str(solution_json), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    wall = time.perf_counter() - t0
    lat: dict[str, float] = {}
    statuses: list[str] = []
    for line in proc.stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            trace = json.loads(line)
        except json.JSONDecodeError:
            continue
        evaluation = trace.get("evaluation") or {}
        statuses.append(str(evaluation.get("status", "?")))
        wid = (trace.get("workload") or {}).get("uuid")
        ms = (evaluation.get("performance") or {}).get("latency_ms")
        if wid and ms:
            lat[wid] = ms * 1000.0
    status = (
        "PASSED"
        if statuses and all(s.endswith("PASSED") for s in statuses)
        else (",".join(sorted(set(statuses))) or f"exit {proc.returncode}")
    )
    return {"status": status, "wall_s": wall, "latency_us": lat, "stderr_tail": proc.stderr[-1500:]}


def render(rows: list[dict[str, Any]]) -> str:
    """The side-by-side table: status, geomean latency over the workloads both ran, their ratio, our
    build time (the harness's start-up phase) and each side's wall time."""
    head = f"{'solution':16} {'language':9} {'ours':13} {'ours us':>9} {'SOL CLI':10} {'SOL us':>9}"
    lines = [head + f" {'ratio':>6} {'build s':>7} {'ours s':>7} {'SOL s':>7}"]

    def fmt(v: float | None, f: str) -> str:
        return format(v, f) if v is not None else "-"

    for row in rows:
        o, t = row["ours"], row.get("theirs") or {}
        common = sorted(set(o.get("latency_us", {})) & set(t.get("latency_us", {})))
        g_o = geomean([o["latency_us"][k] for k in common] or list(o.get("latency_us", {}).values()))
        g_t = geomean([t["latency_us"][k] for k in common]) if common else None
        ratio = f"{g_o / g_t:6.3f}" if g_o and g_t else "     -"
        build = (o.get("phases_s") or {}).get("startup")
        lines.append(
            f"{row['name']:16} {row['language']:9} {o.get('status', '?')[:13]:13} {fmt(g_o, '9.2f'):>9} "
            f"{t.get('status', '-')[:10]:10} {fmt(g_t, '9.2f'):>9} {ratio} {fmt(build, '7.1f'):>7} "
            f"{fmt(o.get('wall_s'), '7.1f'):>7} {fmt(t.get('wall_s'), '7.1f'):>7}"
        )
        if o.get("status") not in ("PASS", None) and o.get("message"):
            lines.append("    ours: " + o["message"].splitlines()[0][:200])
        if t and not str(t.get("status", "")).startswith("PASS") and t.get("stderr_tail"):
            lines.append("    SOL CLI: " + t["stderr_tail"].strip().splitlines()[-1][:200])
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sol-cli", type=Path, help="directory holding the sol_execbench package")
    parser.add_argument("--sol-site", type=Path, help="extra PYTHONPATH with its dependencies")
    parser.add_argument("--out", type=Path, default=Path("bench_languages_out"))
    parser.add_argument("--only", action="append", help="only these solutions (by name)")
    parser.add_argument("--jobs", type=int, default=1, help="solutions evaluated at a time (default 1)")
    args = parser.parse_args()
    if args.sol_site is None and Path("/tmp/sol-site").is_dir():
        args.sol_site = Path("/tmp/sol-site")
    # absolute: the CLI's own build subprocess runs in a directory of its own (a relative path left it
    # without `sol_execbench` on the H200)
    sol_src = args.sol_cli.resolve() if args.sol_cli and args.sol_cli.is_dir() else None
    args.sol_site = args.sol_site.resolve() if args.sol_site else None
    env, why = sol_cli_env(sol_src, args.sol_site)
    if env is None:
        print(f"SOL-ExecBench CLI side by side: skipped ({why})")
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench_languages_"))
    import torch

    major, minor = torch.cuda.get_device_capability()
    chosen = [sol for sol in solutions() if not args.only or sol.name in args.only]

    def one(sol: Solution) -> dict[str, Any]:
        row: dict[str, Any] = {"name": sol.name, "language": sol.language}
        if major + minor / 10 < sol.min_cc:
            return row | {"ours": {"status": f"SKIP (needs sm {sol.min_cc}+)"}}
        row["ours"] = ours(sol, work)
        row["theirs"] = theirs(sol, env, work) if env is not None else None
        # each row as it finishes, so a call cut short still says what it measured
        print("row", json.dumps(row, default=str)[:3000], flush=True)
        return row

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(one, chosen))
    table = render(rows)
    if args.jobs > 1:
        table += f"\n(--jobs {args.jobs}: solutions ran concurrently; latencies are indicative)"
    print(table)
    # one file back from the device (a call returns few): every raw result and the table
    summary = {"table": table.splitlines(), "rows": rows}
    (args.out / "bench_languages.json").write_text(json.dumps(summary, indent=2, default=str))
    shutil.rmtree(work, ignore_errors=True)
    return (
        0
        if all(
            r["ours"].get("status") in ("PASS",) or str(r["ours"].get("status", "")).startswith("SKIP")
            for r in rows
        )
        else 1
    )


if __name__ == "__main__":
    raise SystemExit(main())
