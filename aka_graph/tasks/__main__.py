"""`python -m aka_graph.tasks check TASK` / `evaluate TASK [--candidate DIR]`: validate a command-task
file, or evaluate a tree (the pristine one, or a candidate directory's editable files over it).

Exit codes: 0 valid / PASS, 1 any other status, 2 a bad task file or bad arguments (one line per problem).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from aka_graph.tasks.loader import TaskFileError, load_task


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aka_graph.tasks", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="validate a task file and list its editable and harness files")
    check.add_argument("task", type=Path)
    evaluate = sub.add_parser("evaluate", help="compile -> correctness -> benchmark, as the campaign does")
    evaluate.add_argument("task", type=Path)
    evaluate.add_argument("--candidate", type=Path, default=None, help="a directory with editable files")
    evaluate.add_argument("--seeds", type=int, default=2)
    evaluate.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    evaluate.add_argument("--isolation", choices=("auto", "bwrap", "none"), default="auto")
    args = parser.parse_args(argv)
    try:
        loaded = load_task(args.task)
    except TaskFileError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    if args.command == "check":
        print(f"{loaded.path}: valid; tree {loaded.tree}")
        print(f"editable ({len(loaded.editable_files())}): {', '.join(loaded.editable_files())}")
        print(f"harness, guarded ({len(loaded.harness_files())}): {', '.join(loaded.harness_files())}")
        return 0
    from aka_graph.tasks.evaluator import CommandTaskEvaluator
    from aka_graph.tools.evaluator.sandbox.local import LocalSandbox

    with tempfile.TemporaryDirectory(prefix="aka-task-") as results:
        result = CommandTaskEvaluator().evaluate(
            LocalSandbox(isolation=args.isolation),
            loaded.path,
            args.candidate,
            Path(results),
            seeds=args.seeds,
            timeout_s=3600,
            gpu_index=None,
            device=args.device,
        )
    print(result.model_dump_json(by_alias=True, indent=2))
    return 0 if result.status == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
