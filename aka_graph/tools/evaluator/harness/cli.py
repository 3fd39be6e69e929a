"""Command line of the harness: `evaluate`, `compare` (for the graph's verification) and the internal
`worker`. Exit status: 0 PASS, 1 any other verdict, 2 bad arguments or operator files."""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from . import report
from .cpu_budget import CPU_BUDGET_S

COMPARISON_SCHEMA = "aka_graph.comparison.v1"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--op-dir", required=True, type=Path)
    p.add_argument("--out", type=Path, help="where to write the result JSON (stdout when omitted)")
    p.add_argument(
        "--seeds",
        type=int,
        default=3,
        help="correctness seeds in all, incl. one at another scale and one edge/interior mix",
    )
    p.add_argument("--shape-id", action="append", dest="shape_ids", help="evaluate only these workloads")
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    p.add_argument("--call-timeout", type=float, help="per-call watchdog in seconds")
    p.add_argument("--compile-timeout", type=float, default=300.0)
    p.add_argument("--gpu-spec", help="use this peak-table entry instead of the detected GPU")
    p.add_argument("--peak-table", type=Path, help="a JSON peak table replacing the built-in one")
    p.add_argument(
        "--private-shapes",
        action="store_true",
        help="production mode: withhold every message that could carry shapes back to the agent",
    )
    p.add_argument(
        "--blob-root",
        type=Path,
        help="directory that workloads' safetensors paths are relative to (FlashInfer-Bench blobs)",
    )
    p.add_argument(
        "--all-workloads",
        action="store_true",
        help="on CPU, every workload (default: a representative subset within the interpreter's work cap)",
    )
    p.add_argument(
        "--cpu-budget-s",
        type=float,
        default=CPU_BUDGET_S,
        help="on CPU, the default subset stops after its first reference calls when the evaluation is "
        "projected past this many seconds (0: no limit; --shape-id and --all-workloads are never limited)",
    )
    p.add_argument(
        "--no-source-policy",
        action="store_true",
        help="skip the static kernel-source policy (tests of the in-worker checks only)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness")
    sub = parser.add_subparsers(dest="mode", required=True)
    ev = sub.add_parser("evaluate", help="evaluate one kernel")
    _common(ev)
    ev.add_argument("--kernel-dir", required=True, type=Path)
    cmp = sub.add_parser("compare", help="ABBA-interleaved timing of several kernels in one process")
    _common(cmp)
    cmp.add_argument("--kernel-dir", required=True, action="append", dest="kernels", help="LABEL=DIR")
    cmp.add_argument("--pattern", default="ABBA")
    cmp.add_argument("--repeats", type=int, default=2)
    prof = sub.add_parser("profile", help="run one workload a few times for a profiler (profile_run.py)")
    prof.add_argument("--op-dir", required=True, type=Path)
    prof.add_argument("--kernel-dir", required=True, type=Path)
    prof.add_argument("--shape-id", help="the workload (default: the first)")
    prof.add_argument("--reps", type=int, default=3, help="profiled calls")
    prof.add_argument("--warmup", type=int, default=2, help="calls before profiling starts")
    prof.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    prof.add_argument("--out", type=Path)
    sv = sub.add_parser("serve", help="evaluate a campaign's candidates in one warm parent (serve.py)")
    _common(sv)
    sv.add_argument("--spool", required=True, type=Path, help="the directory of requests and results")
    sv.add_argument("--idle-timeout", type=float, default=900.0, help="end after this many idle seconds")
    wk = sub.add_parser("worker", help=argparse.SUPPRESS)
    wk.add_argument("--op-dir", required=True)
    wk.add_argument("--kernel-dir", required=True)
    wk.add_argument("--device", required=True)
    wk.add_argument("--rfd", type=int, required=True)
    wk.add_argument("--wfd", type=int, required=True)
    wk.add_argument("--bulk-fd", type=int, help="the parent's sealed shared region for outputs (shm.py)")
    return parser


def _emit(obj: dict[str, Any], out: Path | None) -> None:
    text = json.dumps(obj, indent=2, allow_nan=False, default=str)
    if out:
        out.write_text(text + "\n")
    else:
        sys.stdout.write(text + "\n")


def _failure(status: str, message: str) -> dict[str, Any]:
    return report.result(status, "", {"name": "unknown", "arch": "unknown"}, "none", False, [], [], message)


def _user_error(message: str, args: argparse.Namespace) -> int:
    """A malformed operator or bad argument: one line naming the problem and the fix, exit 2. The result
    JSON says so too (the schema has no user-error status, so it carries INFRA_ERROR and the message)."""
    print(f"error: {message}", file=sys.stderr)
    _emit(_failure("INFRA_ERROR", f"bad operator or arguments: {message}"), args.out)
    return 2


def main(argv: list[str] | None = None) -> int:
    t0 = time.perf_counter()
    args = _parser().parse_args(argv)
    if args.mode == "worker":
        from .worker import worker_main

        return worker_main(args.op_dir, args.kernel_dir, args.device, args.rfd, args.wfd, args.bulk_fd)
    if args.mode == "profile":
        from .profile_run import main as profile_main

        return profile_main(args)
    if args.mode == "serve":
        from .serve import serve

        if not args.op_dir.is_dir():
            return _user_error(f"--op-dir {args.op_dir}: not a directory; pass the operator's", args)
        return serve(_settings(args), args.spool, args.idle_timeout)
    kernels = _kernels(args)
    if kernels is None:
        return 2
    workers: dict[str, Any] = {}
    if args.op_dir.is_dir():  # start the workers first: their start-up overlaps the parent's
        from .refcache import preload
        from .worker_proc import WorkerProcess, become_subreaper

        preload()  # the carried reference-timing entries, read before any worker exists
        become_subreaper()
        blobs = args.blob_root.resolve() if args.blob_root else None  # covered in the jail, as the op dir
        workers = {label: WorkerProcess(args.op_dir, p, args.device, blobs) for label, p in kernels.items()}
    try:
        return _run(args, kernels, workers, t0)
    finally:
        for worker in workers.values():
            worker.close()


def _kernels(args: argparse.Namespace) -> dict[str, Path] | None:
    if args.mode == "evaluate":
        kernels = {"A": args.kernel_dir}
    else:
        kernels = {}
        for item in args.kernels:
            label, sep, path = item.partition("=")
            if not sep or not label:
                print(f"--kernel-dir {item!r}: use LABEL=DIR", file=sys.stderr)
                return None
            kernels[label] = Path(path)
    for label, path in kernels.items():
        if not path.is_dir():
            print(
                f"kernel directory {path} ({label}) not found; pass a directory holding kernel.py",
                file=sys.stderr,
            )
            return None
    return kernels


def _settings(args: argparse.Namespace) -> Any:
    from .session import Settings

    return Settings(
        op_dir=args.op_dir,
        seeds=args.seeds,
        shape_ids=args.shape_ids,
        device=args.device,
        call_timeout=args.call_timeout,
        compile_timeout=args.compile_timeout,
        gpu_spec=args.gpu_spec,
        peak_table=args.peak_table,
        source_policy=not args.no_source_policy,
        private_shapes=args.private_shapes,
        all_workloads=args.all_workloads,
        cpu_budget_s=args.cpu_budget_s,
        blob_root=args.blob_root.resolve() if args.blob_root else None,
    )


def _run(args: argparse.Namespace, kernels: dict[str, Path], workers: dict[str, Any], t0: float) -> int:
    import torch

    from .cpu_budget import HostTooSlow
    from .gpu_specs import UnknownGpuError
    from .inputs import out_of_memory
    from .memory import HostTooSmall
    from .modes import pattern_order, run
    from .opmodel import OperatorError
    from .trusted import ReferenceFailed

    settings = _settings(args)
    if args.blob_root is not None and not args.blob_root.is_dir():
        return _user_error(
            f"--blob-root {args.blob_root}: not a directory; pass the dataset's blob root", args
        )
    if args.mode == "compare":
        try:
            pattern_order(args.pattern, list(kernels))
        except ValueError as exc:
            return _user_error(str(exc), args)
    try:
        results, rounds = run(
            settings,
            kernels,
            "A" if args.mode == "evaluate" else args.pattern,
            1 if args.mode == "evaluate" else args.repeats,
            workers=workers,
            t0=t0,
        )
    except OperatorError as exc:  # the operator's files (or a flag naming them): the user's to fix
        return _user_error(str(exc), args)
    except ReferenceFailed as exc:  # the operator's own reference: no verdict on the candidate
        print(f"error: {exc}", file=sys.stderr)
        _emit(_failure("INFRA_ERROR", str(exc)), args.out)
        return 1
    except (UnknownGpuError, HostTooSmall, HostTooSlow) as exc:  # the environment's, said as such
        print(f"error: {exc}", file=sys.stderr)
        _emit(_failure("INFRA_ERROR", str(exc)), args.out)
        return 1
    except Exception as exc:  # the harness's own failure: never a score
        if out_of_memory(exc):  # the environment's: said in one line, with where it would run
            where = "GPU" if isinstance(exc, torch.OutOfMemoryError) else "host"
            line = (
                f"the harness ran out of the {where}'s memory: {type(exc).__name__}: {str(exc)[:400]}; "
                "evaluate where there is more free memory (fewer evaluations at once, a larger host or GPU)"
            )
            print(f"error: {line}", file=sys.stderr)
            _emit(_failure("INFRA_ERROR", line), args.out)
            return 1
        tb = traceback.format_exc()
        print(tb, file=sys.stderr)
        _emit(
            _failure("INFRA_ERROR", f"harness failure: {type(exc).__name__}: {exc}\n{tb[-6000:]}"), args.out
        )
        return 1
    if args.mode == "evaluate":
        res = results["A"]
        res.pop("label", None)
        print(report.table(res), file=sys.stderr)
        _emit(res, args.out)
        return 0 if res["status"] == "PASS" else 1
    for label, res in results.items():
        print(f"[{label}] " + report.table(res), file=sys.stderr)
    statuses = [r["status"] for r in results.values()]
    any_res = next(iter(results.values()))
    comparison = {
        "schema": COMPARISON_SCHEMA,
        "status": "PASS" if all(s == "PASS" for s in statuses) else report.worst(statuses),
        "timing_method": any_res["timing_method"],
        "authoritative": all(r["authoritative"] for r in results.values()),
        "kernels": results,
        "rounds": rounds,
        "message": "; ".join(f"{k}: {r['message']}" for k, r in results.items() if r["message"])[:4000],
    }
    _emit(comparison, args.out)
    return 0 if comparison["status"] == "PASS" else 1
