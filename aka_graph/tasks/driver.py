"""The driver an outside optimizer loop calls: OUR compile / correctness / benchmark of the current
sources of its working tree, behind the harness guard.

`python -m aka_graph.tasks.driver --config DRIVER.json compile|check|bench` (the outside-loop backend
writes a shim script `aka-driver` that runs exactly this). Before every call the guard compares the
tree's harness files with the snapshot taken when the episode started: a change is reverted, recorded,
and the call refused (exit 3). Every result is appended to the episode's driver log with the sources'
sha256, so what the loop saw can be checked against what our evaluator says afterwards. Prints one JSON
line: {"status", "objective_us", "sha256", "message"}; exit 0 on PASS, 1 otherwise, 2 on bad usage.

In production mode (`private` in the config) the task's cases are private: the output and the log keep
the status, the objective (a geomean over the scored cases, as production records keep it) and the
sha256, never the evaluator's message (it names cases and carries the job's output), and every job's
files (the spec with the cases, the raw output) go to a scratch directory outside the workspace that is
removed after the call.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aka_graph.tasks.evaluator import CommandTaskEvaluator
from aka_graph.tasks.guard import HarnessGuard
from aka_graph.tasks.loader import TaskFileError, load_task
from aka_graph.tools.records.privacy import WITHHELD

STOP_AFTER = {"compile": "build", "check": "correctness", "bench": None}
EXIT_TAMPERED = 3


def write_config(
    path: Path,
    *,
    task: Path,
    tree: Path,
    pristine: Path,
    state_dir: Path,
    device: str,
    seeds: int,
    baseline: dict[str, str],
    isolation: str = "auto",
    private: bool = False,
    scratch_root: Path | None = None,
) -> Path:
    """The driver's configuration for one episode (the baseline is the guard's snapshot at its start;
    `private`: production mode, job files under `scratch_root`, outside the workspace)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "guard_baseline.json").write_text(json.dumps(baseline))
    path.write_text(
        json.dumps(
            {
                "task": str(task),
                "tree": str(tree),
                "pristine": str(pristine),
                "state_dir": str(state_dir),
                "device": device,
                "seeds": seeds,
                "isolation": isolation,
                "private": private,
                "scratch_root": str(scratch_root) if scratch_root else None,
            },
            indent=1,
        )
    )
    return path


def driver_log(state_dir: Path) -> list[dict[str, Any]]:
    path = Path(state_dir) / "driver_log.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def run(config: dict[str, Any], action: str) -> tuple[int, dict[str, Any]]:
    from aka_graph.tools.evaluator.sandbox.local import LocalSandbox

    loaded = load_task(Path(config["task"]))
    tree, state = Path(config["tree"]), Path(config["state_dir"])
    guard = HarnessGuard(loaded, Path(config["pristine"]))
    baseline = json.loads((state / "guard_baseline.json").read_text())
    call = len(driver_log(state)) + 1
    report = guard.enforce(tree, baseline, state / "guard.jsonl", call=call, action=action)
    if report.tampered:
        out = {"status": "FORBIDDEN_EDIT", "objective_us": None, "sha256": None, "message": report.message()}
        _log(state, call, action, out)
        return EXIT_TAMPERED, out
    private = bool(config.get("private"))
    results = (
        Path(tempfile.mkdtemp(prefix="aka-driver-", dir=config.get("scratch_root")))
        if private
        else state / "calls" / str(call)
    )
    try:
        result = CommandTaskEvaluator().evaluate(
            LocalSandbox(isolation=config.get("isolation", "auto")),
            Path(config["task"]),
            tree,
            results,
            seeds=int(config["seeds"]),
            timeout_s=3600,
            gpu_index=None,
            device=config["device"],
            stop_after=STOP_AFTER[action],
            private_shapes=private,
        )
    finally:
        if private:
            shutil.rmtree(results, ignore_errors=True)
    out = {
        "status": result.status,
        "objective_us": result.summary.objective,
        "sha256": result.kernel_sha256,
        "message": withheld(result.status) if private else result.message[-1500:],
    }
    _log(state, call, action, out)
    return (0 if result.status == "PASS" else 1), out


def withheld(status: str) -> str:
    """What a private result may say: its status only (the message names cases and carries job output)."""
    return f"{status} ({WITHHELD})"


def _log(state: Path, call: int, action: str, out: dict[str, Any]) -> None:
    with (state / "driver_log.jsonl").open("a") as handle:
        handle.write(json.dumps({"call": call, "action": action, "at": time.time(), **out}) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="aka-driver", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("action", choices=sorted(STOP_AFTER))
    args = parser.parse_args(argv)
    try:
        config = json.loads(args.config.read_text())
        code, out = run(config, args.action)
    except (OSError, json.JSONDecodeError, KeyError) as exc:
        print(
            f"aka-driver: unusable config {args.config} ({exc}); the outside-loop backend writes it",
            file=sys.stderr,
        )
        return 2
    except TaskFileError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(json.dumps(out), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
