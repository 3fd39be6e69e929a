"""Build the git-ignored `.corpus/` of real SOL-ExecBench problems and agent-written solutions from a
public repository's snapshot, to test the evaluator against operators and kernels nobody here wrote.

Why: our fixtures are our own reading of the format; the benchmark's own problems (L1, L2, Quant,
FlashInfer-Bench) and kernels that coding agents wrote for them (and SOL-ExecBench's grader called correct)
are what users will point a campaign at. Their rows are under NVIDIA's evaluation-dataset licence: the
corpus is never committed (`.corpus/` is git-ignored), only this script that rebuilds it.

Source: `bras6379/sol-execbench-solver` (`fetch` it first; its `problems/N/` hold the dataset's
definition.json, reference.py and workload.jsonl of 235 problems, and its `runs/N/candidates/*.json` the
solutions of a B200 campaign over 55 of them, each with the grader's `correct`).

    python3 benchmarks/build_public_corpus.py [--mirror /work/.mirror/bras6379+sol-execbench-solver/repo]

Writes .corpus/problems/<name>/{definition.json,workload.jsonl,metadata.json} and
.corpus/solutions/<name>/<cand_id>/solution.json (only those the grader called correct), and
.corpus/MANIFEST.json (the snapshot's commit, counts).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MIRROR = Path("/work/.mirror/bras6379+sol-execbench-solver/repo")


def _git(mirror: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={mirror}", *args], check=True, capture_output=True, text=True
    ).stdout


def _show(mirror: Path, path: str) -> str:
    return _git(mirror, "show", f"HEAD:{path}")


def as_sol_solution(candidate: dict, definition: str) -> dict:
    """A campaign candidate (`{spec: {languages}, sources}`) as the SOL solution its campaign submitted:
    the snapshot stores only the languages; its harness adapter fills the rest as SOL's schema needs it,
    with the entry point `<first source>::run` and value-returning calls (destination_passing_style
    false), as every best_solution.json of the snapshot reads."""
    given = candidate.get("spec") or {}
    sources = candidate["sources"]
    spec = {
        "languages": given.get("languages") or ["pytorch"],
        "target_hardware": given.get("target_hardware") or ["B200", "LOCAL"],
        "entry_point": given.get("entry_point") or f"{sources[0]['path']}::run",
        "dependencies": given.get("dependencies") or ["torch"],
        "destination_passing_style": bool(given.get("destination_passing_style", False)),
    }
    for key in ("binding", "compile_options"):
        if key in given:
            spec[key] = given[key]
    return {
        "name": f"{definition}_candidate",
        "definition": definition,
        "author": "agent",
        "spec": spec,
        "sources": sources,
    }


def build(mirror: Path, out: Path) -> dict[str, int | str]:
    files = _git(mirror, "ls-tree", "-r", "--name-only", "HEAD").split()
    if out.exists():
        shutil.rmtree(out)
    problems, by_task = 0, {}
    for f in files:
        if not (f.startswith("problems/") and f.endswith("/definition.json")):
            continue
        folder = f.rsplit("/", 1)[0]
        meta = json.loads(_show(mirror, f"{folder}/metadata.json"))
        name = meta["name"]
        dest = out / "problems" / name
        dest.mkdir(parents=True)
        for part in ("definition.json", "workload.jsonl", "metadata.json"):
            (dest / part).write_text(_show(mirror, f"{folder}/{part}"))
        by_task[str(meta.get("task_id", folder.split("/")[1]))] = name
        problems += 1
    solutions = 0
    for f in files:
        if not (f.startswith("runs/") and f.endswith("/candidates/index.jsonl")):
            continue
        run = f.split("/")[1]
        definition = json.loads(_show(mirror, f"runs/{run}/definition.json"))["name"]
        for line in _show(mirror, f).splitlines():
            row = json.loads(line)
            if not row.get("correct"):
                continue
            cand = json.loads(_show(mirror, f"runs/{run}/candidates/{row['cand_id']}.json"))
            solution = cand.get("solution")
            if isinstance(solution, str):
                solution = json.loads(solution)
            if not isinstance(solution, dict) or not solution.get("sources"):
                continue
            dest = out / "solutions" / definition / row["cand_id"]
            dest.mkdir(parents=True)
            (dest / "solution.json").write_text(json.dumps(as_sol_solution(solution, definition), indent=1))
            (dest / "grader.json").write_text(
                json.dumps({k: row.get(k) for k in ("sol_score", "agent", "model", "strategy")})
            )
            solutions += 1
    manifest = {
        "source": "github:bras6379/sol-execbench-solver",
        "commit": _git(mirror, "rev-parse", "HEAD").strip(),
        "problems": problems,
        "solutions": solutions,
    }
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR, help="the fetched repository's git dir")
    ap.add_argument("--out", type=Path, default=REPO / ".corpus")
    args = ap.parse_args()
    if not (args.mirror / "HEAD").is_file():
        print(f"error: {args.mirror} is no git directory; fetch github:bras6379/sol-execbench-solver first")
        return 2
    print(json.dumps(build(args.mirror, args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
