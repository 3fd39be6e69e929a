"""Real SOL-ExecBench problems through the evaluator (issue 9): each problem's own reference as the
candidate must PASS, and so must the agent-written solutions SOL-ExecBench's grader called correct, or the
verdict must be one we can defend by reading the kernel (a cheat, a B200-only instruction).

The corpus is built by `benchmarks/build_public_corpus.py` into the git-ignored `.corpus/` (never
committed: the dataset's licence). Every evaluation runs the harness as a job does (a fresh job directory,
`python -m harness evaluate`); results go, one JSON line each, to --out as they finish, so a cut-off call
keeps what it measured and `--resume` skips what a file already holds.

On CUDA, give each evaluation a GPU of its own (`--gpus N`: N at a time, each seeing one GPU), as a
campaign's host-wide GPU lock does. Several on one GPU (`--parallel` alone) measures crowding, not the
evaluator: on one H200 with 8 at a time (round 16), 47 of 95 verdicts that were not PASS were the other
evaluations' memory (CUDA out of memory) and 16 references were called REWARD_HACK by the burst check,
whose clock the other processes' kernels slowed.

    python3 benchmarks/bench_public_corpus.py --kind references --device cuda --gpus 8 --out r.jsonl
    python3 benchmarks/bench_public_corpus.py --kind solutions --device cuda --only 069_rms_norm
    python3 benchmarks/bench_public_corpus.py --table r.jsonl          # the table of a results file
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import queue
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evaluator_gpu import REPO, evaluate

CORPUS = REPO / ".corpus"


def short_message(message: str, head: int = 600, tail: int = 5000) -> str:
    """A result's message as a row keeps it: its start, and where it is longer the end too (a harness
    failure's traceback ends with the line that failed, which is what the next session needs)."""
    if len(message) <= head + tail:
        return message
    return f"{message[:head]} [...] {message[-tail:]}"


def reference_kernel(problem: Path, into: Path) -> Path:
    """The problem's own reference as a value-returning candidate (kernel.py)."""
    source = json.loads((problem / "definition.json").read_text())["reference"]
    into.mkdir(parents=True, exist_ok=True)
    (into / "kernel.py").write_text(source + "\n\nDESTINATION_PASSING_STYLE = False\n")
    return into


def items(
    corpus: Path, kind: str, only: list[str], subset: str | None
) -> list[tuple[str, Path, Path | None]]:
    """(label, problem dir, solution dir or None for the reference) in a stable order."""
    found = []
    for problem in sorted((corpus / "problems").iterdir()):
        meta = json.loads((problem / "metadata.json").read_text())
        if subset and meta.get("subset") != subset:
            continue
        if only and not any(o in problem.name for o in only):
            continue
        if kind == "references":
            found.append((problem.name, problem, None))
            continue
        for sol in sorted((corpus / "solutions" / problem.name).glob("*/solution.json")):
            found.append((f"{problem.name}/{sol.parent.name}", problem, sol.parent))
    return found


def one(
    label: str,
    problem: Path,
    solution: Path | None,
    device: str,
    timeout_s: float,
    gpus: queue.Queue | None,
    shape_ids: list[str] | None = None,
) -> dict[str, Any]:
    """One evaluation, on a GPU of its own when `gpus` holds free GPU indices (taken, then given back)."""
    meta = json.loads((problem / "metadata.json").read_text())
    gpu = gpus.get() if gpus is not None else None
    try:
        with tempfile.TemporaryDirectory(prefix="aka_corpus_") as tmp:
            kernel = solution or reference_kernel(problem, Path(tmp) / "kernel")
            env = {"CUDA_VISIBLE_DEVICES": str(gpu)} if gpu is not None else None
            t0 = time.perf_counter()
            res = evaluate(problem, kernel, device, 3, shape_ids or None, timeout_s, env_extra=env)
            wall = time.perf_counter() - t0
    finally:
        if gpus is not None:
            gpus.put(gpu)
    workloads = res.get("workloads") or []
    return {
        "label": label + (f" ({len(shape_ids)} workloads)" if shape_ids else ""),
        "subset": meta.get("subset"),
        "status": res.get("status"),
        "message": short_message(str(res.get("message", ""))),
        "wall_s": round(wall, 1),
        "rc": res.get("_rc", res.get("rc")),
        "workloads": len(workloads),
        "workload_status": dict(collections.Counter(str(w.get("status")) for w in workloads)),
        "speedup": res.get("speedup"),
        "phases_s": res.get("phases_s"),  # where a slow problem's time went
        "spans_s": heavy_spans(res),  # and within the phases, the steps over a tenth of a second
        "device": device,
        "gpu": gpu,
    }


def heavy_spans(res: dict[str, Any], floor_s: float = 0.1) -> dict[str, float]:
    """The parent's spans and the worker's advisory ones that took at least `floor_s` in all (seconds)."""
    found: dict[str, float] = {}
    for key in ("spans_s", "worker_spans_s"):
        for name, v in (res.get(key) or {}).items():
            if isinstance(v, dict) and float(v.get("s", 0.0)) >= floor_s:
                found[name] = round(float(v["s"]), 2)
    return found


def table(rows: list[dict[str, Any]]) -> str:
    lines = []
    by = collections.Counter((r["subset"], r["status"]) for r in rows)
    subsets = sorted({r["subset"] for r in rows})
    statuses = sorted({r["status"] for r in rows})
    lines.append("| subset | " + " | ".join(statuses) + " | all |")
    lines.append("|---" * (len(statuses) + 2) + "|")
    for s in subsets:
        lines.append(
            f"| {s} | "
            + " | ".join(str(by[(s, st)]) for st in statuses)
            + f" | {sum(by[(s, st)] for st in statuses)} |"
        )
    walls = sorted(r["wall_s"] for r in rows)
    if walls:
        lines.append(
            f"\nwall per problem: median {walls[len(walls) // 2]:.1f} s, max {walls[-1]:.1f} s, "
            f"n {len(walls)}"
        )
    bad = [r for r in rows if r["status"] != "PASS"]
    if bad:
        lines.append("\nnot PASS:")
        for r in bad:
            lines.append(
                f"- {r['label']} [{r['subset']}] {r['status']} ({r['wall_s']} s): {r['message'][:400]}"
            )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--kind", choices=("references", "solutions"), default="references")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu", "auto"))
    ap.add_argument("--parallel", type=int, default=4, help="at a time (on one device, unless --gpus)")
    ap.add_argument("--gpus", type=int, default=0, help="N GPUs: N at a time, each evaluation on its own")
    ap.add_argument("--timeout", type=float, default=300.0, help="per evaluation, seconds")
    ap.add_argument("--only", nargs="*", default=[], help="problem names containing any of these")
    ap.add_argument("--skip", nargs="*", default=[], help="leave out problem names containing any of these")
    ap.add_argument("--subset", help="L1, L2, Quant or FlashInfer-Bench")
    ap.add_argument("--limit", type=int, default=0, help="at most this many evaluations")
    ap.add_argument("--shuffle", type=int, help="evaluate in an order drawn with this seed (a sample)")
    ap.add_argument("--plain", action="store_true", help="solutions only: those naming no CUDA")
    ap.add_argument("--out", type=Path, help="JSON lines, appended as evaluations finish")
    ap.add_argument("--resume", action="store_true", help="skip labels --out already holds")
    ap.add_argument("--table", type=Path, help="print the table of a results file and stop")
    ap.add_argument("--shape-id", action="append", default=[], dest="shape_ids",
                    help="only this workload (repeatable; with --only naming one problem)")  # fmt: skip
    args = ap.parse_args()
    if args.table:
        print(table([json.loads(x) for x in args.table.read_text().splitlines() if x.strip()]))
        return 0
    if not (args.corpus / "problems").is_dir():
        print(f"error: no corpus at {args.corpus}; run benchmarks/build_public_corpus.py first")
        return 2
    todo = items(args.corpus, args.kind, args.only, args.subset)
    done = set()
    if args.resume and args.out and args.out.is_file():
        done = {json.loads(x)["label"] for x in args.out.read_text().splitlines() if x.strip()}
    todo = [t for t in todo if t[0] not in done and not any(s in t[0] for s in args.skip)]
    if args.plain:  # what a CPU host can run: PyTorch and Triton (interpreted) that name no CUDA
        todo = [t for t in todo if t[2] is None or "cuda" not in (t[2] / "solution.json").read_text().lower()]
    if args.shuffle is not None:
        random.Random(args.shuffle).shuffle(todo)
    if args.limit:
        todo = todo[: args.limit]
    gpus: queue.Queue | None = None
    if args.gpus:
        gpus = queue.Queue()
        for i in range(args.gpus):
            gpus.put(i)
        args.parallel = args.gpus
    print(f"{len(todo)} evaluations ({args.kind}, {args.device}, {args.parallel} at a time)", flush=True)
    rows = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.parallel) as pool:
        futures = [pool.submit(one, *t, args.device, args.timeout, gpus, args.shape_ids) for t in todo]
        for fut in concurrent.futures.as_completed(futures):
            row = fut.result()
            rows.append(row)
            print(
                f"{row['status']:<13} {row['wall_s']:>6.1f} s  {row['label']}  {row['message'][:160]}",
                flush=True,
            )
            if args.out:
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
