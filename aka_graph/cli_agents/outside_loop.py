"""Outside optimizer loops as an agent backend: an existing loop command (with its own agent inside, like
KernelForge's forge-loop) run as a black box for one episode of a command task.

What the campaign keeps control of:
- **Our measurements.** The loop gets a generated shim, `aka-driver compile|check|bench` (on PATH and in
  `$AKA_DRIVER`), which runs OUR evaluator on the current sources of its tree, behind the harness guard
  (`aka_graph/tasks/driver.py`). Whatever the loop measures itself is only a claim.
- **The deadline.** The episode's `timeout_s` (from the campaign's budget): the loop runs in its own
  session; at the deadline its whole process group gets SIGTERM then SIGKILL, and any process left in
  its session is killed too (`cli_agents.process.run_streaming`, `process_tree.kill_tree`).
- **The edits.** Harness files are hashed before the run and checked after it (reverted when changed);
  every other change is checked with git: only the task's editable files may differ. A run that broke
  either rule has its edits undone (editable files included), so nothing it produced can be scored.
- **The claims.** A line `{"type": "claim", "objective_us": X}` on stdout is a claim; after the run the
  tree is re-scored by our evaluator and both numbers are reported. The campaign then evaluates and
  verifies the candidate as it would any agent's.
- **Private cases (production mode).** A run that comes with an agent sandbox (`AgentRun.sandbox`: the
  campaign sets one on every agent run in production mode; or `private=True`) treats the task's cases as
  private: the loop runs confined in that sandbox (its worktree, its own installation, and an exchange
  directory outside the workspace with its prompt, its state and the shim), the shim is a client of the
  driver served from this process (`tasks/driver_service.py`: the task file stays out of the loop's
  reach), its answers, the driver log and the re-scoring keep statuses, objectives and digests, never
  the evaluator's messages, and every evaluation job's files live in a scratch directory the loop cannot
  see, removed when the run ends.
- **Tokens.** Lines `{"type": "tokens", "input": N, "output": M, "cache_read": .., "cache_write": ..}`
  (increments) are summed and count against the token budget, which can stop the loop mid-run.

The loop command may use `{prompt_file}`, `{driver}`, `{tree}` and `{deadline_s}` in its argv; its own
state files belong in `$AKA_LOOP_STATE` (outside the worktree).
Configured by `AKA_OUTSIDE_LOOP_COMMAND` (a shell-quoted command line) and `AKA_OUTSIDE_LOOP_TASK`
(the task file) for `--agent-cli outside-loop`.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import git

from aka_graph.cli_agents.base import (
    AgentNotReady,
    AgentResult,
    AgentRun,
    BudgetExceeded,
    TokenObserver,
    TokenUsage,
)
from aka_graph.cli_agents.process import TranscriptPaths, run_streaming
from aka_graph.cli_agents.sandbox import AgentSandbox, sandboxed_argv
from aka_graph.process_tree import kill_tree, session_members
from aka_graph.tasks.driver import withheld, write_config
from aka_graph.tasks.driver_service import DriverService, write_client
from aka_graph.tasks.guard import GuardReport, HarnessGuard
from aka_graph.tasks.loader import LoadedTask, TaskFileError, load_task
from aka_graph.tasks.seeding import TREE_DIR
from aka_graph.tools.records.workspace import EVIDENCE_PATTERNS

COMMAND_ENV = "AKA_OUTSIDE_LOOP_COMMAND"
TASK_ENV = "AKA_OUTSIDE_LOOP_TASK"
TOKEN_FIELDS = ("input", "output", "cache_read", "cache_write")


class OutsideLoopBackend:
    """`AgentBackend` running an outside optimizer loop for one episode (see the module docstring)."""

    name = "outside-loop"

    def __init__(
        self,
        command: list[str],
        task: Path,
        *,
        tree_subdir: str = TREE_DIR,
        pristine: Path | None = None,
        device: str = "auto",
        seeds: int = 2,
        isolation: str = "auto",
        sandbox: Any = None,
        term_grace_s: float = 3.0,
        private: bool | None = None,
    ) -> None:
        self.command = list(command)
        self.task = Path(task)
        self.tree_subdir = tree_subdir
        self.pristine = pristine
        self.device = device
        self.seeds = seeds
        self.isolation = isolation
        self.sandbox = sandbox
        self.term_grace_s = term_grace_s
        self.private = private  # None: private exactly when the run is sandboxed (production mode)

    @classmethod
    def from_environment(cls) -> OutsideLoopBackend:
        command, task = os.environ.get(COMMAND_ENV, ""), os.environ.get(TASK_ENV, "")
        return cls(shlex.split(command), Path(task))

    def check_ready(self) -> None:
        if not self.command:
            raise AgentNotReady(f"no outside loop command: set {COMMAND_ENV}='your-loop --flags'")
        if shutil.which(self.command[0]) is None and not Path(self.command[0]).is_file():
            raise AgentNotReady(
                f"outside loop {self.command[0]!r} not found: install it or fix {COMMAND_ENV}"
            )
        try:
            load_task(self.task)
        except TaskFileError as exc:
            raise AgentNotReady(f"outside loop task ({TASK_ENV}): {exc.lines[0]}") from exc

    # ---- one episode -----------------------------------------------------------------------------
    def run(self, run: AgentRun, on_tokens: TokenObserver | None = None) -> AgentResult:
        private = self.private if self.private is not None else run.sandbox is not None
        scratch = Path(tempfile.mkdtemp(prefix="aka-outside-loop-")) if private else None
        try:
            return self._run(run, on_tokens, scratch)
        finally:
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)

    def _run(self, run: AgentRun, on_tokens: TokenObserver | None, scratch: Path | None) -> AgentResult:
        """One episode; `scratch` (production mode): where evaluation jobs keep their files."""
        loaded = load_task(self.task)
        cwd = Path(run.cwd)
        tree = cwd / self.tree_subdir if self.tree_subdir else cwd
        state = Path(run.transcript_dir) / "outside_loop"
        guard = HarnessGuard(loaded, self.pristine or loaded.tree)
        baseline = guard.snapshot(tree)
        git_start = _git_head_and_changes(cwd)
        # the loop's view: the shim, its prompt and its own state (production: an exchange directory, the
        # only campaign path besides the worktree that the confined loop sees; the driver is a service)
        exchange = scratch / "exchange" if scratch is not None else state
        shim = self._write_shim(loaded, tree, state, baseline, scratch)
        loop_state = exchange / "loop"
        loop_state.mkdir(parents=True, exist_ok=True)
        prompt_file = exchange / "prompt.md"
        prompt_file.write_text(run.prompt)
        deadline = time.time() + run.timeout_s
        values = {
            "prompt_file": str(prompt_file),
            "driver": str(shim),
            "tree": str(tree),
            "deadline_s": f"{run.timeout_s:.0f}",
        }
        argv = [_fill(arg, values) for arg in self.command]
        env = {
            **os.environ,
            "AKA_DRIVER": str(shim),
            "AKA_TREE": str(tree),
            "AKA_DEADLINE": f"{deadline:.0f}",
            "AKA_PROMPT_FILE": str(prompt_file),
            "AKA_LOOP_STATE": str(loop_state),  # the loop's own files belong here, not in the worktree
            "PATH": f"{shim.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        service = None
        if scratch is not None:  # production: the task file is not the loop's to read
            env.pop(TASK_ENV, None)
            argv = confined_argv(run.sandbox, argv, cwd=cwd, environ=env, exchange=exchange)
            service = DriverService(exchange / "driver.sock", self._driver_handler(state)).start()
        tokens, claims = TokenUsage(accuracy="unavailable"), []

        def on_line(line: str) -> str | None:
            nonlocal tokens
            event = _json_line(line)
            if event.get("type") == "claim":
                claims.append(event)
            elif event.get("type") == "tokens":
                increment = TokenUsage(**{k: int(event.get(k, 0)) for k in TOKEN_FIELDS}, accuracy="exact")
                increment.total = sum(getattr(increment, k) for k in TOKEN_FIELDS)
                tokens = increment if tokens.accuracy == "unavailable" else tokens + increment
                if on_tokens is not None:
                    try:
                        on_tokens(tokens)
                    except BudgetExceeded as exc:
                        return f"budget: {exc}"
            return None

        transcript = TranscriptPaths.allocate(Path(run.transcript_dir), self.name, run.role)
        try:
            outcome = run_streaming(
                argv,
                cwd=cwd,
                env=env,
                timeout_s=run.timeout_s,
                transcript=transcript,
                on_line=on_line,
                term_grace_s=self.term_grace_s,
            )
            survivors = session_members(outcome.pid) if outcome.pid > 0 else []
            if survivors:  # left the process group but not the session: killed all the same
                kill_tree(outcome.pid, grace_s=self.term_grace_s)
        finally:
            if service is not None:
                service.close()
        if exchange != state:  # the loop's own files, kept with the episode's records
            shutil.copytree(loop_state, state / "loop", dirs_exist_ok=True, symlinks=True)
        report = guard.enforce(tree, baseline, state / "guard.jsonl", role=run.role, **run.labels)
        forbidden = _revert_outside_editable(cwd, tree, loaded, git_start)
        problems = []
        if report.tampered:
            problems.append(report.message())
        if forbidden:
            problems.append(f"edits outside the editable set (reverted): {', '.join(forbidden)}")
        if problems:  # nothing this run produced may be scored
            _reset_editable(cwd, tree, loaded, git_start)
        jobs, private = scratch or state, scratch is not None
        rescored = None if problems else self._rescore(loaded, tree, jobs, claims, private)
        summary = {
            "claims": claims,
            "rescored": rescored,
            "guard": _guard_dict(report),
            "forbidden": forbidden,
            "timed_out": outcome.timed_out,
            "stopped": outcome.stop_reason,
            "exit_code": outcome.exit_code,
            "survivors_killed": survivors,
            "driver_calls": _count_lines(state / "driver_log.jsonl"),
        }
        (state / "episode.json").write_text(json.dumps(summary, indent=1, default=str))
        stopped = bool(outcome.stop_reason and outcome.stop_reason.startswith("budget"))
        return AgentResult(
            exit_code=outcome.exit_code,
            session_id=f"{self.name}-{outcome.pid}",
            tokens=tokens,
            transcript_path=transcript.stdout,
            final_text=json.dumps(summary, default=str),
            timed_out=outcome.timed_out,
            failed=bool(problems) or stopped,
            error="; ".join(problems) or (outcome.stop_reason or ""),
            stopped=stopped,
        )

    def _driver_handler(self, state: Path) -> Any:
        """The service's handler: the driver on this episode's configuration (production mode)."""
        from aka_graph.tasks.driver import STOP_AFTER, run

        config = json.loads((state / "driver.json").read_text())

        def handle(action: str) -> tuple[int, dict[str, Any]]:
            if action not in STOP_AFTER:
                return 2, {"status": "BAD_REQUEST", "objective_us": None, "sha256": None,
                           "message": f"unknown action; use one of {sorted(STOP_AFTER)}"}
            return run(config, action)

        return handle

    def _write_shim(
        self, loaded: LoadedTask, tree: Path, state: Path, baseline: dict[str, str], scratch: Path | None
    ) -> Path:
        """The loop's `aka-driver`: it runs the driver itself, or (production) asks the driver service."""
        config = write_config(
            state / "driver.json",
            task=loaded.path,
            tree=tree,
            pristine=self.pristine or loaded.tree,
            state_dir=state,
            device=self.device,
            seeds=self.seeds,
            baseline=baseline,
            isolation=self.isolation,
            private=scratch is not None,
            scratch_root=scratch / "jobs" if scratch is not None else None,
        )
        if scratch is not None:
            (scratch / "jobs").mkdir(parents=True, exist_ok=True)
            exchange = scratch / "exchange"
            return write_client(exchange / "bin" / "aka-driver", exchange / "driver.sock")
        shim = state / "bin" / "aka-driver"
        shim.parent.mkdir(parents=True, exist_ok=True)
        shim.write_text(
            f"#!{sys.executable}\n"
            "# Generated by aka_graph: OUR compile / check / bench of the current sources (see driver.py).\n"
            "import sys\n"
            "from aka_graph.tasks.driver import main\n"
            f"sys.exit(main(['--config', {str(config)!r}, *sys.argv[1:]]))\n"
        )
        shim.chmod(shim.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return shim

    def _rescore(
        self, loaded: LoadedTask, tree: Path, jobs: Path, claims: list[dict[str, Any]], private: bool
    ) -> dict[str, Any] | None:
        """Our evaluator on the tree the loop left: the only number anything may be promoted on (its job
        files under `jobs`; `private`: the message withheld)."""
        if not claims:
            return None
        from aka_graph.tasks.evaluator import CommandTaskEvaluator
        from aka_graph.tools.evaluator.sandbox.local import LocalSandbox

        sandbox = self.sandbox or LocalSandbox(isolation=self.isolation)
        result = CommandTaskEvaluator().evaluate(
            sandbox,
            loaded.path,
            tree,
            jobs / "rescore",
            seeds=self.seeds,
            timeout_s=3600,
            gpu_index=None,
            device=self.device,
            private_shapes=private,
        )
        claimed = claims[-1].get("objective_us")
        confirmed = result.status == "PASS" and isinstance(claimed, int | float)
        return {
            "status": result.status,
            "objective_us": result.summary.objective,
            "sha256": result.kernel_sha256,
            "claimed_objective_us": claimed,
            "message": withheld(result.status) if private else result.message[-500:],
            "ratio_to_claim": (result.summary.objective / claimed) if confirmed and claimed else None,
        }


def confined_argv(
    sandbox: AgentSandbox | None, argv: list[str], *, cwd: Path, environ: dict[str, str], exchange: Path
) -> list[str]:
    """`argv` in the run's agent sandbox, which also lets the loop write the exchange directory and read
    its own installation (the directories of the files its command line names)."""
    if sandbox is None:
        return argv
    executable = Path(shutil.which(argv[0], path=environ.get("PATH")) or argv[0])
    own = [Path(a).resolve().parent for a in argv[1:] if Path(a).is_file()]
    return sandboxed_argv(
        sandbox.with_paths(writable=[exchange]), argv, cwd=cwd, environ=environ, executable=executable,
        extra_readable=own,
    )


def _fill(arg: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        arg = arg.replace("{" + key + "}", value)
    return arg


def _json_line(line: str) -> dict[str, Any]:
    line = line.strip()
    if not line.startswith("{"):
        return {}
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _count_lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.is_file() else 0


def _guard_dict(report: GuardReport) -> dict[str, Any]:
    return {
        "modified": report.modified,
        "added": report.added,
        "removed": report.removed,
        "reverted": report.reverted,
    }


def _repo(cwd: Path) -> git.Repo | None:
    try:
        return git.Repo(cwd, search_parent_directories=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None


def _git_head_and_changes(cwd: Path) -> tuple[str, set[str]] | None:
    repo = _repo(cwd)
    if repo is None:
        return None
    return repo.head.commit.hexsha, set(_changed(repo))


def _changed(repo: git.Repo) -> list[str]:
    """Paths git sees changed vs HEAD: tracked edits and untracked, not-ignored files."""
    out = repo.git.status("--porcelain", "--untracked-files=all", "--no-renames")
    return [line[3:].strip('"') for line in out.splitlines() if line]


def _revert_outside_editable(
    cwd: Path, tree: Path, loaded: LoadedTask, start: tuple[str, set[str]] | None
) -> list[str]:
    """Changes git sees that are neither editable files of the tree nor plans/profiles, put back as they were
    (tracked) or removed (new); returns them. Changes present before the run are not the loop's."""
    repo = _repo(cwd)
    if repo is None or start is None:
        return []
    prefix = tree.relative_to(cwd).as_posix() + "/" if tree != cwd else ""
    forbidden = []
    for path in _changed(repo):
        if path in start[1]:
            continue
        rel = path[len(prefix) :] if path.startswith(prefix) else None
        evidence = any(fnmatch.fnmatch(path, pattern) for pattern in EVIDENCE_PATTERNS)
        if (rel is not None and loaded.is_editable(rel)) or evidence:
            continue  # an editable file, or plans/profiles (evidence the campaign keeps for any agent)
        forbidden.append(path)
        tracked = bool(repo.git.ls_files("--", path))
        if tracked:
            repo.git.checkout(start[0], "--", path)
        else:
            target = cwd / path
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
    return sorted(forbidden)


def _reset_editable(cwd: Path, tree: Path, loaded: LoadedTask, start: tuple[str, set[str]] | None) -> None:
    """Undo the run's edits to the editable files too (a run that broke the rules is not scored)."""
    repo = _repo(cwd)
    if repo is None or start is None:
        return
    prefix = tree.relative_to(cwd).as_posix() + "/" if tree != cwd else ""
    paths = [f"{prefix}{rel}" for rel in loaded.editable_files()]
    tracked = [p for p in paths if repo.git.ls_files("--", p)]
    if tracked:
        repo.git.checkout(start[0], "--", *tracked)
