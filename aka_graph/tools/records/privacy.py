"""Production mode's promise, kept in one place: private shapes never reach an agent.

A native operator's `shapes.json` is private in production mode. Its ids and values exist only in the
operator's own directory, inside evaluation jobs, and in the mapping below; everywhere else (results,
ledger, memory records, verdicts, prompts, report, git) a workload is an opaque id `w_<random hex>` that is
drawn once per campaign and reveals nothing, not even the order of `shapes.json`.

- `OpaqueIds`: the private id -> opaque id mapping, a 0600 file kept outside the workspace (beside the
  checkpoints, where agent sandboxes never reach).
- `mask_evaluation` / `mask_comparison`: evaluator output as agents may see it: opaque ids, no
  per-workload bytes/FLOPs/SOL bounds (exact functions of the shape), no free text from the job.
- `LeakScanner` / `audit_campaign`: search text, files and every git object for each private id and each
  distinctive private shape value; findings name opaque ids only, so a report of a leak leaks nothing.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import string
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aka_graph.cli_agents.sandbox import AgentSandbox
from aka_graph.tools.evaluator.evaluation_result import EvaluationResult, WorkloadResult

SHAPES_FILE = "shapes.json"
OPAQUE_PREFIX = "w_"
OPAQUE_LETTERS = 12  # 26**12 ids: about 56 bits
IDS_FILE = "opaque_ids.json"
WITHHELD = "details withheld: private shapes"
# Numbers below this, powers of two and multiples of 64 are everywhere in kernels, dates and counters:
# finding one proves nothing, so only rarer shape values are searched for (ids are always searched).
MIN_DISTINCTIVE_VALUE = 100
# JSON counters the campaign itself writes (token counts, timings, pids): a shape value there is chance.
COUNTER_KEY = re.compile(
    r'"(?:[A-Za-z_]*(?:token|tokens|input|output|cache_read|cache_write|total|_ms|_s|duration|pid|pgid|'
    r"exit_code|attempt|version|episode|trial|bytes|count|seed|seeds)[A-Za-z_]*)\"\s*:\s*\[?\s*$"
)
PER_WORKLOAD_WITHHELD = ("sol_bound_us", "sol_hard_bound_us", "bytes_moved", "flops", "utilization_pct")


class PrivacyViolation(RuntimeError):
    """A private shape id or value reached a place an agent can read; the campaign must fail."""

    def __init__(self, findings: list[str]) -> None:
        super().__init__("; ".join(findings))
        self.findings = findings


@dataclass(frozen=True)
class PrivateShapes:
    """A native operator's private workloads: id -> the integer values of its init/input kwargs."""

    values: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def of_operator(cls, op_dir: Path) -> PrivateShapes:
        """The shapes of a native operator's `shapes.json` (none for SOL problems, whose workloads are
        public files)."""
        from aka_graph.tasks.private_cases import case_values, command_task_of

        task = command_task_of(op_dir)
        if task is not None:  # a command task: its cases are its private shapes
            return cls(case_values(task))
        path = Path(op_dir) / SHAPES_FILE
        if not path.is_file() or (Path(op_dir) / "definition.json").is_file():
            return cls()
        data = json.loads(path.read_text())
        if isinstance(data, list):
            data = {str(s.get("id", i)): s for i, s in enumerate(data)}
        return cls({str(sid): tuple(_ints(entry)) for sid, entry in data.items()})

    @property
    def ids(self) -> list[str]:
        return list(self.values)

    def distinctive_values(self, public_text: str = "") -> set[int]:
        """Values rare enough that finding one is evidence (and absent from the public files)."""
        public = {int(m) for m in re.findall(r"(?<![\w.])\d+(?![\w])", public_text)}
        return {v for vs in self.values.values() for v in vs if _distinctive(v) and v not in public}


def _ints(entry: Any) -> Iterator[int]:
    if isinstance(entry, bool):
        return
    if isinstance(entry, int):
        yield entry
    elif isinstance(entry, dict):
        for value in entry.values():
            yield from _ints(value)
    elif isinstance(entry, list | tuple):
        for value in entry:
            yield from _ints(value)


def _distinctive(value: int) -> bool:
    v = abs(value)
    return v >= MIN_DISTINCTIVE_VALUE and v & (v - 1) != 0 and v % 64 != 0


class OpaqueIds:
    """Private id -> `w_<hex>`, drawn once per campaign and stored (mode 0600) where agents never reach."""

    def __init__(self, path: Path, mapping: dict[str, str]) -> None:
        self.path = path
        self.mapping = mapping
        self.reverse = {v: k for k, v in mapping.items()}

    @classmethod
    def load_or_create(cls, path: Path, private_ids: Iterable[str]) -> OpaqueIds:
        """Read the campaign's mapping, adding a fresh random id for any private id it lacks."""
        path = Path(path)
        mapping: dict[str, str] = json.loads(path.read_text()) if path.is_file() else {}
        missing = [i for i in private_ids if i not in mapping]
        for private in missing:
            opaque = _draw_opaque()
            while opaque in mapping.values():
                opaque = _draw_opaque()
            mapping[private] = opaque
        if missing or not path.is_file():
            _write_private(path, json.dumps(mapping, indent=2, sort_keys=True) + "\n")
        return cls(path, mapping)

    def opaque(self, private_id: str) -> str:
        return self.mapping.get(private_id, private_id)

    def scrub(self, text: str) -> str:
        """`text` with every private id replaced by its opaque id."""
        for private, opaque in sorted(self.mapping.items(), key=lambda kv: -len(kv[0])):
            text = _bounded(private).sub(opaque, text)
        return text


def _draw_opaque() -> str:
    """A fresh random id of letters only: with no digit in it, no shape number can ever show up inside one
    (a hex id such as `w_c71237a5e3fb` reads as a leak of a hidden size 1237, to people and to checks)."""
    return OPAQUE_PREFIX + "".join(secrets.choice(string.ascii_lowercase) for _ in range(OPAQUE_LETTERS))


def _write_private(path: Path, text: str) -> None:
    """Create or replace a file readable by its owner only (never world- or group-readable, not even
    between creation and chmod)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _bounded(token: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w]){re.escape(token)}(?![\w])")


def _withheld(status: str) -> str:
    if status == "INFRA_ERROR":
        return f"{status} ({WITHHELD}; the operator finds the diagnostic in the campaign's private log)"
    return f"{status} ({WITHHELD})"


def mask_workload(w: WorkloadResult, ids: OpaqueIds) -> WorkloadResult:
    update: dict[str, Any] = {name: None for name in PER_WORKLOAD_WITHHELD}
    update["id"] = ids.opaque(w.id)
    update["message"] = _withheld(w.status) if w.message else ""
    return w.model_copy(update=update)


def mask_evaluation(result: EvaluationResult, ids: OpaqueIds) -> EvaluationResult:
    """What agents and records may hold of an evaluation: opaque ids in random order (sorted by the
    opaque id), no shape-derived numbers per workload, no free text from the job (candidate-controlled
    or shape-revealing); the summary numbers (objective, geomeans) stay."""
    workloads = sorted((mask_workload(w, ids) for w in result.workloads), key=lambda w: w.id)
    message = _withheld(result.status) if result.message else ""
    cache = result.reference_timing_cache  # which workloads' reference times were cached: by opaque id
    cached = sorted(ids.opaque(str(w)) for w in cache.get("cached_workloads", []))
    masked_cache = {"used": cache["used"], "cached_workloads": cached} if "used" in cache else {}
    return result.model_copy(
        update={
            "workloads": workloads,
            "message": message,
            "reference_timing_cache": masked_cache,  # no free text (its reason, its directory)
            "output_transfer": {},  # output bytes are a function of the shapes
        }
    )


def mask_comparison(result: Any, ids: OpaqueIds) -> Any:
    """A `ComparisonResult` with every kernel's evaluation masked and the rounds keyed by opaque ids."""
    kernels = {label: mask_evaluation(r, ids) for label, r in result.kernels.items()}
    rounds = [
        r.model_copy(update={"latency_us": {ids.opaque(k): v for k, v in sorted(r.latency_us.items())}})
        for r in result.rounds
    ]
    message = _withheld(result.status) if result.message else ""
    return result.model_copy(update={"kernels": kernels, "rounds": rounds, "message": message})


class LeakScanner:
    """Finds private ids and distinctive private shape values in text; findings name opaque ids only."""

    def __init__(
        self, shapes: PrivateShapes, ids: OpaqueIds, public_text: str = "", public_paths: Iterable[str] = ()
    ) -> None:
        self.ids = ids
        # the user's own directories (the workspace, the operator's directory) show up in every transcript
        # and prompt; a number in their names (`/tmp/pytest-211/runs`) is the user's choice, not a shape
        paths = {str(p) for p in public_paths if str(p) not in ("", "/")}
        self.public_paths = sorted(paths, key=len, reverse=True)
        # an id the public files state (a command task's case named like a word of its tree) is no evidence
        self.id_patterns = {sid: _bounded(sid) for sid in shapes.ids if not _bounded(sid).search(public_text)}
        values = shapes.distinctive_values(public_text)
        # a value of its own: not part of a longer number (digits, decimals, or a report's 613,455.66)
        self.value_patterns = {
            v: re.compile(rf"(?<![\w.]){v}(?![\w]|\.\d|(?:,\d{{3}})+\.\d)") for v in sorted(values)
        }
        self.value_owner = {
            v: sorted(ids.opaque(sid) for sid, vs in shapes.values.items() if v in vs) for v in values
        }

    @property
    def active(self) -> bool:
        return bool(self.id_patterns or self.value_patterns)

    def scan(self, text: str, where: str, binary: bool = False) -> list[str]:
        """Findings in `text`; in a `binary` file's bytes only the ids are searched (three digits turn up
        by chance in compressed data, e.g. the report's plot: a value found there proves nothing)."""
        findings = [
            f"private shape id of {self.ids.opaque(sid)} in {where}"
            for sid, pattern in self.id_patterns.items()
            if pattern.search(text)
        ]
        for path in self.public_paths:
            text = text.replace(path, "PUBLIC_PATH")  # a word, as a path's last name is: `run1237` stays one
        for value, pattern in () if binary else self.value_patterns.items():
            for match in pattern.finditer(text):
                if COUNTER_KEY.search(text[max(0, match.start() - 60) : match.start()]):
                    continue
                owners = ", ".join(self.value_owner[value])
                findings.append(f"a private shape value of {owners} in {where}")
                break
        return findings

    # ---- what to scan ---------------------------------------------------------------------------
    def scan_files(self, root: Path, skip: Iterable[Path] = ()) -> list[str]:
        """Every regular file under `root` (symlinks not followed; `.git` directories are scanned as git
        objects instead)."""
        skipped = {Path(p).resolve() for p in skip}
        findings: list[str] = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [
                d for d in dirnames if d != ".git" and (Path(dirpath) / d).resolve() not in skipped
            ]
            for name in filenames:
                path = Path(dirpath) / name
                if path.is_symlink() or not path.is_file() or name == ".git":
                    continue
                data = path.read_bytes()
                text = data.decode("utf-8", errors="replace")
                findings += self.scan(text, str(path.relative_to(root)), binary=_is_binary(data))
        return findings

    def scan_git_objects(self, repo_dir: Path, objects: Iterable[str] | None = None) -> list[str]:
        """Every object of the repository (all branches, worktrees, unreachable ones too) or the given
        ones: blob contents, commit and tag messages, tree entry names."""
        if objects is None:
            listing = _git(repo_dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
            objects = listing.decode().split()
        names = list(objects)
        if not names:
            return []
        out = subprocess.run(
            ["git", "-C", str(repo_dir), "cat-file", "--batch"],
            input=("\n".join(names) + "\n").encode(),
            capture_output=True,
            check=True,
        ).stdout
        findings: list[str] = []
        pos = 0
        while pos < len(out):
            header_end = out.index(b"\n", pos)
            sha, kind, size = out[pos:header_end].decode().split()
            body = out[header_end + 1 : header_end + 1 + int(size)]
            pos = header_end + 1 + int(size) + 1
            text = _tree_names(body) if kind == "tree" else body.decode("utf-8", errors="replace")
            findings += self.scan(text, f"git {kind} {sha[:12]}", binary=kind == "blob" and _is_binary(body))
        return findings

    def scan_commit(self, repo_dir: Path, sha: str) -> list[str]:
        """The objects one new commit introduced (its message, trees and blobs not in its parents)."""
        parents = _git(repo_dir, "rev-list", "--parents", "-n", "1", sha).decode().split()[1:]
        listing = _git(repo_dir, "rev-list", "--objects", sha, *(f"^{p}" for p in parents)).decode()
        return self.scan_git_objects(repo_dir, [line.split()[0] for line in listing.splitlines() if line])


def _is_binary(data: bytes) -> bool:
    """Not text: a NUL byte in the first 8 KiB (git's own test)."""
    return b"\0" in data[:8192]


def _git(repo_dir: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo_dir), *args], capture_output=True, check=True).stdout


def _tree_names(body: bytes) -> str:
    """The entry names of a raw tree object (mode SP name NUL 20-byte sha, repeated)."""
    names: list[str] = []
    pos = 0
    while pos < len(body):
        nul = body.index(b"\0", pos)
        names.append(body[pos:nul].split(b" ", 1)[1].decode("utf-8", errors="replace"))
        pos = nul + 21
    return "\n".join(names)


def public_operator_text(root: Path) -> str:
    """What the workspace's public operator files say (numbers there are public, never a leak)."""
    op = Path(root) / "op"
    return "\n".join(
        p.read_text(errors="replace") for p in sorted(op.glob("*")) if p.is_file() and p.name != ".gitkeep"
    )


def audit_campaign(ws_root: Path, scanner: LeakScanner) -> list[str]:
    """The final privacy check: every git object, every file of the workspace (worktrees, results,
    records, transcripts and the prompts they hold, the report); findings deduplicated, in order."""
    findings = scanner.scan_git_objects(ws_root) + scanner.scan_files(ws_root)
    return list(dict.fromkeys(findings))


def private_dir(workspace: Path, campaign: str) -> Path:
    """The campaign's private directory beside the checkpoints (outside the workspace, 0700)."""
    return Path(workspace).resolve() / "checkpoints" / f"{campaign}.private"


def campaign_privacy(workspace: Path, campaign: str, op_dir: Path) -> tuple[OpaqueIds, LeakScanner] | None:
    """The campaign's opaque ids and scanner when its operator has private shapes, else None."""
    shapes = PrivateShapes.of_operator(op_dir)
    if not shapes.ids:
        return None
    ids = OpaqueIds.load_or_create(private_dir(workspace, campaign) / IDS_FILE, shapes.ids)
    ws_root = Path(workspace).resolve() / campaign
    public = public_operator_text(ws_root)
    from aka_graph.tasks.private_cases import command_task_of, public_tree_text

    task = command_task_of(op_dir)
    if task is not None:  # a command task's pristine tree is given to every agent: its text is public
        public += "\n" + public_tree_text(task)
    return ids, LeakScanner(shapes, ids, public, public_paths(workspace, op_dir))


def public_paths(workspace: Path, op_dir: Path) -> list[str]:
    """The directories the user chose, as given and resolved: the workspace (every worktree, transcript
    and prompt names paths under it) and the operator's directory."""
    return [str(p) for d in (workspace, op_dir) for p in (Path(d).absolute(), Path(d).resolve())]


def agent_sandbox(
    workspace: Path, ws_root: Path, op_dir: Path, worktree: Path, mode: str = "auto"
) -> AgentSandbox:
    """The isolation of an agent working in `worktree`: the worktree writable, and hidden whatever of the
    campaign it must not read — the checkpoints (ids mapping, the deriver's scratch), results, ledger,
    report, transcripts, the other episodes' worktrees and the operator's own directory."""
    root = Path(ws_root).resolve()
    worktree = Path(worktree).resolve()
    hidden = [
        Path(workspace).resolve() / "checkpoints",
        Path(op_dir).resolve(),
        *(root / name for name in ("results", "records", "report", "transcripts", "submission.json")),
    ]
    hidden.append(root / "episodes")
    return AgentSandbox(
        writable=(worktree,),
        hidden=tuple(p for h in hidden for p in _hide_around(h, worktree)),
        mode=mode,  # type: ignore[arg-type]
    )


def _hide_around(path: Path, keep: Path) -> list[Path]:
    """`path` itself, or — when it holds `keep` (a V1 reviewer's copy under results/, the deriver's
    scratch under checkpoints/) — everything inside it except the way down to `keep`."""
    if not keep.is_relative_to(path):
        return [path]
    if keep == path or not path.is_dir():
        return []
    child_on_path = path / keep.relative_to(path).parts[0]
    return [
        hidden
        for child in sorted(path.iterdir())
        for hidden in ([child] if child != child_on_path else _hide_around(child, keep))
    ]


class PrivateEvaluator:
    """The campaign's evaluator in production mode: asks the harness to withhold its messages
    (`--private-shapes`) and hands back only masked results, so nothing downstream can leak a shape.

    The job's raw outputs (the harness's own result/compare JSON, logs) never land in the workspace: the
    job syncs back into a scratch directory of the campaign's private directory, removed afterwards. An
    infrastructure failure's diagnostic (a traceback may name shapes) is appended to `log` there, for
    the operator."""

    def __init__(self, inner: Any, ids: OpaqueIds, private_root: Path) -> None:
        self.inner = inner
        self.ids = ids
        self.private_root = Path(private_root)

    @property
    def log(self) -> Path:
        return self.private_root / "evaluator.log"

    def _keep_diagnostic(self, status: str, message: str) -> None:
        if status != "INFRA_ERROR" or not message:
            return
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("a") as f:
            f.write(f"--- {status}\n{message}\n")

    def _run(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        sandbox, op_dir, subject = args[:3]
        kwargs.pop("results_dir", None)
        scratch = self.private_root / "jobs" / secrets.token_hex(8)
        run = getattr(self.inner, method)
        try:
            return run(sandbox, op_dir, subject, scratch, **kwargs, private_shapes=True)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def evaluate(self, *args: Any, **kwargs: Any) -> EvaluationResult:
        """`evaluate(sandbox, op_dir, kernel_dir, results_dir, ...)`; results_dir receives nothing raw."""
        result = self._run("evaluate", args, kwargs)
        self._keep_diagnostic(result.status, result.message)
        return mask_evaluation(result, self.ids)

    def compare(self, *args: Any, **kwargs: Any) -> Any:
        """`compare(sandbox, op_dir, kernels, results_dir, ...)`; results_dir receives nothing raw."""
        result = self._run("compare", args, kwargs)
        self._keep_diagnostic(result.status, result.message)
        return mask_comparison(result, self.ids)
