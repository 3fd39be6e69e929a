"""GPU-side runner of a command task, uploaded into every sandbox job as `task_runner.py` (stdlib only:
the GPU host has no pydantic).

For each tree in the job (one for an evaluation, two for an interleaved comparison) it runs, fail-closed:
delete the declared stale caches and build outputs -> build (rebuild variables on that subprocess only)
-> check that the build produced every declared output afresh -> correctness of EVERY case (performance
cases included) on every seed -> and only then the benchmark, in the requested interleaving
(`ABBA`: incumbent, candidate, candidate, incumbent). Each command runs in its own process group, killed
whole when it ends or times out, so nothing a command leaves behind reaches the next one.

It records facts (exit codes, output tails, parsed JSON) in `raw.json`; the coordinator turns them into
an `EvaluationResult` (`aka_graph/tasks/evaluator.py`). Glob matching and placeholder filling live here,
once, and the coordinator imports them from this module.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TAIL = 3000
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
JOB_PLACEHOLDERS = ("python", "tree", "device", "seed", "cases")
NEVER_UPLOADED_DIRS = (".git", "__pycache__")


# ---- globs (shared with the coordinator) -------------------------------------------------------------
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A tree-relative glob: `*` and `?` stay inside one path component, `**` spans any number of them;
    a pattern also matches everything under a directory it names (`build` matches `build/x.o`)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + "(?:/.*)?")


def matches(rel: str, patterns: list[str]) -> bool:
    return any(glob_regex(p).fullmatch(rel) for p in patterns)


def tree_files(root: Path) -> list[str]:
    """Every regular file under `root`, tree-relative, sorted (never .git or __pycache__ contents)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in NEVER_UPLOADED_DIRS)
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_file():
                found.append(path.relative_to(root).as_posix())
    return sorted(found)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def editable_digest(root: Path, editable: list[str]) -> str:
    """The candidate's identity: sha256 over (path, sha256) of every editable file present."""
    digest = hashlib.sha256()
    for rel in tree_files(root):
        if matches(rel, editable):
            digest.update(f"{rel}\0{sha256_file(root / rel)}\n".encode())
    return digest.hexdigest()


def fill(argv: list[str], values: dict[str, Any]) -> list[str]:
    """Replace `{name}` in every argument; a name without a value is left as written."""
    return [PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), m.group(0))), arg) for arg in argv]


# ---- commands ----------------------------------------------------------------------------------------
def run_command(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> dict[str, Any]:
    """Run in a new session; the whole process group is killed afterwards (finished or timed out)."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError as exc:
        return {
            "argv": argv,
            "exit": 127,
            "timed_out": False,
            "wall_s": 0.0,
            "stdout": "",
            "stderr": f"cannot start {argv[0]!r}: {exc}",
        }
    timed_out = False
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        stdout, stderr = proc.communicate()
    _kill_group(proc.pid)
    return {
        "argv": argv,
        "exit": proc.returncode,
        "timed_out": timed_out,
        "wall_s": round(time.monotonic() - started, 3),
        "stdout": stdout,
        "stderr": stderr,
    }


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def last_json(text: str) -> dict[str, Any] | None:
    """The last line of `text` that is a JSON object."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    return None


def _tail(record: dict[str, Any], phase: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "phase": phase,
        "argv": record["argv"],
        "exit": record["exit"],
        "timed_out": record["timed_out"],
        "wall_s": record["wall_s"],
        "stdout_tail": record["stdout"][-TAIL:],
        "stderr_tail": record["stderr"][-TAIL:],
        **(extra or {}),
    }


# ---- one tree ----------------------------------------------------------------------------------------
class TreeRun:
    """Build, validate and benchmark one tree; every step appends its facts to `self.facts`."""

    def __init__(self, label: str, root: Path, spec: dict[str, Any], job_dir: Path) -> None:
        self.label, self.root, self.spec = label, root, spec
        self.caches = job_dir / ".caches" / label
        self.facts: dict[str, Any] = {
            "label": label,
            "phases": [],
            "stopped": None,
            "message": "",
            "sha256": editable_digest(root, spec["editable"]),
            "correctness": {},
            "deleted": [],
        }

    def values(self, **extra: Any) -> dict[str, Any]:
        return {"python": sys.executable, "tree": str(self.root), "device": self.spec["device"], **extra}

    def env(self, build: bool) -> dict[str, str]:
        """The job's environment, minus every rebuild variable, plus the task's variables and fresh cache
        dirs; the build alone gets the rebuild variables, forced over anything inherited."""
        env = {k: v for k, v in os.environ.items() if k not in self.spec["rebuild_env"]}
        env.update(self.spec["env"])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(self.root), env.get("PYTHONPATH", "")) if p)
        env["TRITON_CACHE_DIR"] = str(self.caches / "triton")
        env["TORCH_EXTENSIONS_DIR"] = str(self.caches / "torch_extensions")
        env["AKA_TASK_DEVICE"] = self.spec["device"]
        if self.spec["device"] == "cpu":
            env["TRITON_INTERPRET"] = "1"
        if build:
            env.update(self.spec["rebuild_env"])
        return env

    def stop(self, phase: str, message: str) -> bool:
        self.facts["stopped"], self.facts["message"] = phase, message
        return False

    def clean(self) -> None:
        """Delete stale caches and previous build outputs (files and directories), and our cache dirs."""
        doomed = self.spec["stale_paths"] + self.spec["build_outputs"]
        for dirpath, dirnames, filenames in os.walk(self.root, topdown=True):
            for name in [*dirnames, *filenames]:
                path = Path(dirpath) / name
                rel = path.relative_to(self.root).as_posix()
                if matches(rel, doomed):
                    if path.is_dir() and not path.is_symlink():
                        shutil.rmtree(path)
                        dirnames.remove(name)
                    else:
                        path.unlink()
                    self.facts["deleted"].append(rel)
        shutil.rmtree(self.caches, ignore_errors=True)
        self.caches.mkdir(parents=True)

    def build(self) -> bool:
        self.clean()
        command = self.spec["build"]
        started = time.time()
        if command is not None:
            record = run_command(
                fill(command["argv"], self.values()), self.root, self.env(build=True), command["timeout_s"]
            )
            self.facts["phases"].append(_tail(record, "build"))
            if record["timed_out"]:
                return self.stop("build_timeout", f"the build timed out after {command['timeout_s']:.0f} s")
            if record["exit"] != 0:
                return self.stop("build", f"the build failed (exit {record['exit']})")
        missing, stale = [], []
        files = tree_files(self.root)
        for pattern in self.spec["build_outputs"]:
            hits = [rel for rel in files if glob_regex(pattern).fullmatch(rel)]
            if not hits:
                missing.append(pattern)
            stale += [rel for rel in hits if (self.root / rel).stat().st_mtime < started - 1]
        if missing:
            return self.stop("build", f"the build produced no {', '.join(missing)} (declared build outputs)")
        if stale:
            return self.stop("build", f"build outputs older than the build: {', '.join(stale)}")
        return True

    def correctness(self, cases: list[dict[str, Any]], seeds: list[int]) -> bool:
        command = self.spec["correctness"]
        for seed in seeds:
            for group, record_case in _groups(cases, command["argv"]):
                values = self.values(seed=seed, cases=self._cases_file(group, f"check-{seed}"), **record_case)
                record = run_command(
                    fill(command["argv"], values), self.root, self.env(build=False), command["timeout_s"]
                )
                output = last_json(record["stdout"]) or {}
                verdicts = _case_verdicts(group, record, output, is_batch(command["argv"]))
                self.facts["phases"].append(_tail(record, "correctness", {"seed": seed, "cases": verdicts}))
                for case_id, verdict in verdicts.items():
                    self.facts["correctness"].setdefault(case_id, []).append({"seed": seed, **verdict})
                if record["timed_out"]:
                    limit = command["timeout_s"]
                    return self.stop("correctness_timeout", f"correctness timed out after {limit:.0f} s")
                failed = sorted(cid for cid, v in verdicts.items() if not v["passed"])
                if failed:
                    return self.stop("correctness", f"incorrect on {', '.join(failed)} (seed {seed})")
        return True

    def benchmark(self, cases: list[dict[str, Any]], tag: str) -> dict[str, Any] | None:
        """{case id: the benchmark's JSON for it}, or None after recording why it failed."""
        command = self.spec["performance"]
        results: dict[str, Any] = {}
        for group, record_case in _groups(cases, command["argv"]):
            values = self.values(seed=0, cases=self._cases_file(group, f"bench-{tag}"), **record_case)
            record = run_command(
                fill(command["argv"], values), self.root, self.env(build=False), command["timeout_s"]
            )
            self.facts["phases"].append(_tail(record, "performance", {"round": tag}))
            if record["timed_out"]:
                limit = command["timeout_s"]
                self.stop("performance_timeout", f"the benchmark timed out after {limit:.0f} s")
                return None
            output = last_json(record["stdout"])
            if record["exit"] != 0 or output is None:
                self.stop("performance", f"the benchmark failed (exit {record['exit']}) or printed no JSON")
                return None
            per_case = output.get("cases") if is_batch(command["argv"]) else {group[0]["id"]: output}
            if not isinstance(per_case, dict):
                self.stop("performance", "the benchmark's JSON has no 'cases' object")
                return None
            for case in group:
                results[case["id"]] = per_case.get(case["id"])
        return results

    def _cases_file(self, cases: list[dict[str, Any]], name: str) -> str:
        path = self.caches / f"{name}.json"
        path.write_text(json.dumps(cases))
        return str(path)


Case = dict[str, Any]


def _groups(cases: list[Case], argv: list[str]) -> list[tuple[list[Case], Case]]:
    """Batch mode (`{cases}` in the command): one run for all cases, with an empty parameter dict;
    otherwise one run per case, with the case's parameters as placeholders."""
    if is_batch(argv):
        return [(cases, {})]
    return [([case], dict(case)) for case in cases]


def is_batch(argv: list[str]) -> bool:
    return any("{cases}" in arg for arg in argv)


def _case_verdicts(
    group: list[dict[str, Any]], record: dict[str, Any], output: dict[str, Any], batch: bool
) -> dict[str, dict[str, Any]]:
    """Per case: passed only when the command reported the case as passed and exited 0 — or failed
    because of another case it reported failed (batch mode: a case missing from the report was not
    validated, so it did not pass) — or, per case, exited 0 without reporting `passed: false`."""
    reported = output.get("cases") if batch else {group[0]["id"]: output}
    # A failing exit is explained by a case the command itself reported as failed; otherwise (a crash
    # after a clean report, or per-case mode) it fails every case of the run.
    explained = isinstance(reported, dict) and any(
        isinstance(e, dict) and e.get("passed") is False for e in reported.values()
    )
    exit_ok = record["exit"] == 0 or (batch and explained)
    verdicts = {}
    for case in group:
        entry = reported.get(case["id"]) if isinstance(reported, dict) else None
        note = ""
        if record["timed_out"]:
            passed, note = False, "timed out"
        elif not isinstance(entry, dict):
            passed, note = False, "not reported by the correctness command"
        else:
            passed = exit_ok and entry.get("passed", not batch) is True
            if not passed and not exit_ok:
                note = f"exit {record['exit']}"
        entry = entry if isinstance(entry, dict) else {}
        error = entry.get("max_abs_error")
        verdicts[case["id"]] = {
            "passed": passed,
            "note": note,
            "exit": record["exit"],
            "max_abs_error": error if isinstance(error, int | float) else None,
        }
    return verdicts


class CrossTreeAudit:
    """In a comparison every tree lives in the same job: a candidate's benchmark process could rewrite
    the incumbent's files (say, swap in a slow binary). Each tree's files (scratch and caches aside) are
    hashed once all trees are validated and checked before every benchmark run and at the end: a tree
    changed by ANOTHER tree's run voids the tree that ran (REWARD_HACK); a tree changing its own files
    is its own business (its own measurements only), and its snapshot is taken again."""

    def __init__(self, trees: dict[str, TreeRun], ready: list[str], spec: dict[str, Any]) -> None:
        self.trees, self.ready, self.ignore = trees, list(ready), list(spec.get("scratch", []))
        self.snapshots = {label: self.snapshot(label) for label in self.ready} if len(ready) > 1 else {}
        self.last: str | None = None

    def snapshot(self, label: str) -> dict[str, str]:
        root = self.trees[label].root
        return {rel: sha256_file(root / rel) for rel in tree_files(root) if not matches(rel, self.ignore)}

    def ran(self, label: str) -> None:
        self.last = label

    def check(self) -> None:
        for label, before in self.snapshots.items():
            now = self.snapshot(label)
            if now == before:
                continue
            changed = sorted(rel for rel in set(before) | set(now) if before.get(rel) != now.get(rel))
            self.snapshots[label] = now
            if self.last is not None and self.last != label and not self.trees[self.last].facts["stopped"]:
                self.trees[self.last].stop(
                    "tampered", f"its benchmark run changed tree {label}: {', '.join(changed[:10])}"
                )


TORCH_DEVICE_QUERY = (
    "import torch; p = torch.cuda.get_device_properties(0); print(f'{p.name},{p.major}.{p.minor}')"
)


def device_info(device: str) -> dict[str, str]:
    """Name and arch of the job's GPU: nvidia-smi, else torch (inside a sandbox either may be missing)."""
    if device == "cpu":
        return {"name": "cpu", "arch": "cpu"}
    for argv in (
        ["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"],
        [sys.executable, "-c", TORCH_DEVICE_QUERY],
    ):
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False).stdout
            name, cap = (part.strip() for part in out.strip().splitlines()[0].rsplit(",", 1))
            return {"name": name, "arch": "sm_" + cap.replace(".", "")}
        except (OSError, IndexError, ValueError, subprocess.TimeoutExpired):
            continue
    return {"name": "unknown GPU", "arch": "unknown"}


def resolve_device(device: str) -> str:
    """`auto`: cuda when the job can see an NVIDIA GPU (the sandbox exposes its device nodes and sets
    CUDA_VISIBLE_DEVICES only for a job given a GPU), else cpu."""
    if device != "auto":
        return device
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if Path("/dev/nvidiactl").exists() and visible not in ("", "-1"):
        return "cuda"
    try:
        found = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "cpu"
    return "cuda" if found.returncode == 0 and "GPU" in found.stdout else "cpu"


def main(spec_path: str) -> int:
    job_dir = Path.cwd()
    spec = json.loads(Path(spec_path).read_text())
    spec["device"] = resolve_device(spec["device"])
    trees = {label: TreeRun(label, job_dir / rel, spec, job_dir) for label, rel in spec["trees"].items()}
    all_cases = spec["correctness_cases"] + spec["performance_cases"]
    stop_after = spec.get("stop_after")  # the driver shim's `compile` / `check` run fewer phases
    ready = [
        label
        for label, tree in trees.items()
        if tree.build() and (stop_after == "build" or tree.correctness(all_cases, spec["seeds"]))
    ]
    if stop_after:
        ready = []
    audit = CrossTreeAudit(trees, ready, spec)
    rounds = []
    for repeat in range(spec["repeats"]):
        for position, label in enumerate(spec["pattern"]):
            tree = trees[label]
            audit.check()
            if label not in ready or tree.facts["stopped"]:
                continue
            measured = tree.benchmark(spec["performance_cases"], f"{repeat}.{position}")
            audit.ran(label)
            if measured is not None:
                rounds.append({"label": label, "repeat": repeat, "position": position, "cases": measured})
    audit.check()
    raw = {
        "device": spec["device"],
        "device_info": device_info(spec["device"]),
        "trees": {label: tree.facts for label, tree in trees.items()},
        "rounds": rounds,
    }
    Path(spec.get("out", "raw.json")).write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
