"""The campaign workspace: a real git repository holding every version, one branch + worktree per episode.

Git is the campaign's memory of what was tried and kept: the campaign branch only ever receives squashed,
verified promotions and records, while agents work in per-episode worktrees whose diffs the campaign
inspects (anything beyond the editable files is reported so the node can reject it).

Layout of `kernel_opt_<op>_<framework>_<platform>[_production]/` (the campaign branch's working tree):
`kernel.py` (the incumbent), `op/` (public operator files), `memory/` (`vN.json` records), `plans/`,
`profiles/`, `.aka_campaign.json` (identity), `.gitignore`; ignored: `episodes/<n>/` (worktrees),
`results/`, `transcripts/`, `records/` (ledger), `report/`, scratch.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import git
from pydantic import BaseModel

from aka_graph.frameworks import editable_files
from aka_graph.target import HIDDEN_OPERATOR_FILES, NATIVE_CODE_FILES, SOL_FILES, campaign_dir_name
from aka_graph.tools.records.layout import MARKER_FILE, CampaignLayout

AUTHOR_NAME = "aka_graph"
AUTHOR_EMAIL = "aka_graph@localhost"
CAMPAIGN_BRANCH = "campaign"
MARKER = MARKER_FILE
EVIDENCE_PATTERNS = ("plans/*", "profiles/*")
PROTECTED_PATTERNS = (
    "op/*", "harness/*", "skills/*", ".claude/skills/*", ".agents/skills/*", ".qoder/skills/*",
    "memory/v*.json", ".gitignore", MARKER,
)
GITIGNORE = """\
# aka_graph campaign workspace: scratch and large artefacts stay out of git
episodes/
results/
transcripts/
records/
report/
scratch/
checkpoints/
memory/live.json
__pycache__/
*.pyc
.triton/
.langgraph_api/
.claude/
.agents/
.qoder/
.codex/
.pi/
"""
SKILL_LINK_DIRS = (".claude/skills", ".agents/skills", ".qoder/skills")
SOL_PUBLIC = SOL_FILES
NATIVE_CODE = NATIVE_CODE_FILES
NEVER_COPIED = HIDDEN_OPERATOR_FILES


class WorkspaceError(RuntimeError):
    """The workspace cannot be used as asked; the message names the problem and the fix."""


class CandidateDiff(BaseModel):
    """What an episode changed relative to the campaign commit it started from."""

    episode: int
    base_sha: str
    changed: list[str]
    editable: list[str]
    evidence: list[str]
    forbidden: list[str]
    patch: str = ""

    @property
    def only_editable(self) -> bool:
        """True when nothing outside the editable files (and plans/profiles evidence) changed."""
        return not self.forbidden

    @property
    def has_candidate(self) -> bool:
        return bool(self.editable)


@dataclass(frozen=True)
class OperatorInstall:
    kind: Literal["sol", "native"]
    files: list[str]
    commit: str
    missing: list[str] = field(default_factory=list)


def _differs(installed: Path, source: Path) -> bool:
    """An installed operator file that differs from the source (a derived public problem may come later)."""
    if not installed.is_file():
        return installed.name != "agent_problem.json"
    return sha256_file(installed) != sha256_file(source)


def _matches(path: str, patterns: tuple[str, ...] | list[str]) -> bool:
    return any(fnmatch.fnmatch(path, p) or path == p for p in patterns)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def clear_stale_git_locks(workspace: Path) -> list[str]:
    """Remove git lock files a coordinator killed mid-git-command left in the campaign's repositories.

    Called only when no live process of this campaign can be holding them: a fleet coordinator that has
    taken the campaign's lease over, or `run`/`resume` when the campaign's previous runner is gone."""
    removed = []
    if workspace.is_dir():
        for lock in workspace.rglob("*.lock"):
            if ".git" in lock.relative_to(workspace).parts and lock.is_file():
                lock.unlink(missing_ok=True)
                removed.append(str(lock.relative_to(workspace)))
    return removed


class CampaignWorkspace:
    """A campaign's git repository; reopening it never loses history."""

    def __init__(self, root: Path, identity: dict[str, object]) -> None:
        self.root = root
        self.layout = CampaignLayout(root)
        self.identity = identity
        self.repo = git.Repo(root)
        self.campaign_branch = CAMPAIGN_BRANCH
        # the campaign framework's files (frameworks.py); a command task replaces them with its own
        self.editable_files: list[str] = editable_files(str(identity.get("framework", "pytorch")))
        # called with (repository dir, sha) after every commit made here (production: the leak guard)
        self.on_commit: Callable[[Path, str], None] | None = None
        self.protected_patterns: list[str] = list(PROTECTED_PATTERNS)

    # ---- creation -------------------------------------------------------------------------------
    @classmethod
    def open_or_create(
        cls, parent: Path, op_name: str, framework: str, platform: str, production: bool
    ) -> CampaignWorkspace:
        root = Path(parent).resolve() / campaign_dir_name(op_name, framework, platform, production)
        identity = {"op_name": op_name, "framework": framework, "platform": platform,
                    "production": production}
        marker = root / MARKER
        if marker.is_file():
            try:
                found = json.loads(marker.read_text())
            except json.JSONDecodeError as e:
                raise WorkspaceError(f"{marker} is not valid JSON ({e}); restore it from git") from e
            if {k: found.get(k) for k in identity} != identity:
                raise WorkspaceError(
                    f"{root} belongs to campaign {found}, not {identity}: choose another --workspace")
            if not (root / ".git").exists():
                raise WorkspaceError(f"{root} has a campaign marker but no git repository: move it away")
            ws = cls(root, identity)
            ws._checkout_campaign()
            return ws
        if root.exists() and any(root.iterdir()):
            raise WorkspaceError(
                f"{root} exists and is not an aka_graph campaign (no {MARKER}): "
                "move it away or choose another --workspace")
        cls._create(root, identity)
        return cls(root, identity)

    @classmethod
    def _create(cls, root: Path, identity: dict[str, object]) -> None:
        """Build the repository and its first commit beside `root`, then rename it into place: a process
        killed half-way leaves only the staging directory (redone next time), never a marked workspace
        without its first commit or a bare `.git` that `open_or_create` would refuse as foreign."""
        staging = root.with_name(f".{root.name}.creating")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        repo = git.Repo.init(staging, initial_branch=CAMPAIGN_BRANCH)
        with repo.config_writer() as cw:
            cw.set_value("user", "name", AUTHOR_NAME)
            cw.set_value("user", "email", AUTHOR_EMAIL)
            cw.set_value("commit", "gpgsign", "false")
        for d in ("op", "memory", "plans", "profiles"):
            (staging / d).mkdir(exist_ok=True)
            (staging / d / ".gitkeep").touch()
        (staging / ".gitignore").write_text(GITIGNORE)
        (staging / MARKER).write_text(json.dumps(identity, indent=2) + "\n")
        cls(staging, identity).commit([".gitignore", MARKER, "op", "memory", "plans", "profiles"],
                                      f"Campaign {root.name}: workspace created")
        repo.close()
        staging.rename(root)  # atomic; `root`, if it exists, is empty (checked above)

    @classmethod
    def reopen(cls, root: Path) -> CampaignWorkspace:
        """A workspace `open_or_create` made earlier, with the identity its marker file records."""
        marker = CampaignLayout(Path(root)).marker
        try:
            identity = json.loads(marker.read_text())
        except FileNotFoundError as e:
            raise WorkspaceError(f"{root} is not a campaign workspace (no {MARKER}): run preprocess") from e
        except json.JSONDecodeError as e:
            raise WorkspaceError(f"{marker} is not valid JSON ({e}); restore it from git") from e
        ws = cls(Path(root), identity)
        ws._checkout_campaign()
        return ws

    def _checkout_campaign(self) -> None:
        if self.repo.head.is_detached or self.repo.active_branch.name != CAMPAIGN_BRANCH:
            if self.repo.is_dirty(untracked_files=False):
                raise WorkspaceError(
                    f"{self.root} is not on branch {CAMPAIGN_BRANCH} and has uncommitted changes: "
                    f"commit or discard them, then `git checkout {CAMPAIGN_BRANCH}`")
            self.repo.git.checkout(CAMPAIGN_BRANCH)

    # ---- paths ----------------------------------------------------------------------------------
    @property
    def results_dir(self) -> Path:
        return self.layout.results_dir

    @property
    def transcripts_dir(self) -> Path:
        return self.layout.transcripts_dir

    @property
    def ledger_path(self) -> Path:
        return self.layout.ledger

    @property
    def op_dir(self) -> Path:
        return self.layout.op_dir

    def episode_path(self, n: int) -> Path:
        return self.layout.episode_worktree(n)

    def episode_branch(self, n: int) -> str:
        return f"episode/{n}"

    # ---- commits on the campaign branch --------------------------------------------------------
    def _author_env(self) -> dict[str, str]:
        return {"GIT_AUTHOR_NAME": AUTHOR_NAME, "GIT_AUTHOR_EMAIL": AUTHOR_EMAIL,
                "GIT_COMMITTER_NAME": AUTHOR_NAME, "GIT_COMMITTER_EMAIL": AUTHOR_EMAIL}

    def _commit_staged(self, repo: git.Repo, message: str) -> str | None:
        if not repo.git.diff("--cached", "--name-only"):
            return None
        repo.git.commit("-q", "--no-verify", "-m", message, env=self._author_env())
        sha = repo.head.commit.hexsha
        if self.on_commit is not None:
            self.on_commit(Path(repo.working_dir), sha)
        return sha

    def commit(self, paths: list[str], message: str) -> str:
        """Commit these paths (additions, edits, deletions) on the campaign branch; no-op → head sha."""
        self._checkout_campaign()
        for p in paths:
            if Path(p).is_absolute() or ".." in Path(p).parts:
                raise WorkspaceError(f"commit path {p!r} must be relative to {self.root} without '..'")
        if paths:
            self.repo.git.add("-A", "--", *paths)
        sha = self._commit_staged(self.repo, message)
        return sha or self.head_sha()

    def head_sha(self) -> str:
        return self.repo.commit(CAMPAIGN_BRANCH).hexsha

    # ---- operator -------------------------------------------------------------------------------
    def install_operator(self, op_dir: Path, production: bool, agent_problem: Path | None = None
                         ) -> OperatorInstall:
        """Copy the operator's PUBLIC files into `op/` and commit them (idempotent).

        SOL: definition.json + workload.jsonl. Native: reference.py, input.py, plus shapes.json in
        leaderboard mode or agent_problem.json in production mode (exact shapes never enter then).
        metadata.json / roofline.json never enter. A reopened campaign whose operator changed is an error.
        """
        op_dir = Path(op_dir)
        if all((op_dir / f).is_file() for f in SOL_PUBLIC):
            kind: Literal["sol", "native"] = "sol"
            sources = {f: op_dir / f for f in SOL_PUBLIC}
        elif all((op_dir / f).is_file() for f in NATIVE_CODE):
            kind = "native"
            sources = {f: op_dir / f for f in NATIVE_CODE}
            if production:
                problem = agent_problem or op_dir / "agent_problem.json"
                if problem.is_file():
                    sources["agent_problem.json"] = problem
            elif (op_dir / "shapes.json").is_file():
                sources["shapes.json"] = op_dir / "shapes.json"
            else:
                raise WorkspaceError(f"{op_dir} has no shapes.json: a leaderboard campaign needs its shapes")
        else:
            raise WorkspaceError(
                f"{op_dir} is not an operator directory: expected SOL-ExecBench "
                "(definition.json + workload.jsonl) or native (reference.py + input.py + shapes.json)")
        missing = [] if kind == "sol" or not production or "agent_problem.json" in sources else [
            "agent_problem.json"]
        dest = self.op_dir
        dest.mkdir(exist_ok=True)
        existing = sorted(p.name for p in dest.iterdir() if p.name != ".gitkeep")
        installed_before = existing and self._op_installed()
        if installed_before:
            changed = [name for name, src in sources.items() if _differs(dest / name, src)]
            extra = [n for n in existing if n not in sources and n != "agent_problem.json"]
            if changed or extra:
                raise WorkspaceError(
                    f"{self.root} was created for a different operator ({', '.join(changed + extra)} "
                    f"differ from {op_dir}): use a new --workspace or restore the original operator")
        for name, src in sources.items():
            if name in NEVER_COPIED:  # defensive: never reachable by the lists above
                continue
            shutil.copyfile(src, dest / name)
        sha = self.commit(["op"], f"Operator {self.identity['op_name']}: public {kind} files installed")
        return OperatorInstall(kind=kind, files=sorted(f"op/{n}" for n in sources), commit=sha,
                               missing=missing)

    def _op_installed(self) -> bool:
        tracked = self.repo.git.ls_files("op").splitlines()
        return any(not t.endswith(".gitkeep") for t in tracked)

    # ---- episodes -------------------------------------------------------------------------------
    def create_episode(self, n: int) -> Path:
        """Branch `episode/<n>` from the campaign head + its worktree; on resume, reuse and reset it."""
        branch, path = self.episode_branch(n), self.episode_path(n)
        self.repo.git.worktree("prune")
        if self._usable_worktree(path):
            wt = git.Repo(path)
            wt.git.checkout("-q", "-f", branch)
            wt.git.reset("-q", "--hard", branch)
            wt.git.clean("-q", "-fd")
            self._mirror_skill_links(path)
            return path
        self._discard_worktree(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if branch in [h.name for h in self.repo.heads]:
            self.repo.git.worktree("add", "-q", str(path), branch)
        else:
            self.repo.git.worktree("add", "-q", "-b", branch, str(path), CAMPAIGN_BRANCH)
        self._mirror_skill_links(path)
        return path

    def _mirror_skill_links(self, worktree: Path) -> None:
        """The skill links installed in the campaign root (ignored by git, so not checked out) are
        recreated in the worktree, pointing at the same skills: the agent works there."""
        for rel in SKILL_LINK_DIRS:
            source_dir = self.root / rel
            if not source_dir.is_dir():
                continue
            for entry in sorted(source_dir.iterdir()):
                link = worktree / rel / entry.name
                if link.exists() or link.is_symlink():
                    continue
                link.parent.mkdir(parents=True, exist_ok=True)
                if entry.is_symlink():
                    link.symlink_to(entry.resolve(), target_is_directory=entry.is_dir())
                elif entry.is_dir():
                    shutil.copytree(entry, link)

    def _worktree_entries(self) -> dict[Path, list[str]]:
        """Each registered worktree's `git worktree list --porcelain` lines (HEAD, branch, locked, ...)."""
        entries: dict[Path, list[str]] = {}
        current: list[str] = []
        for line in self.repo.git.worktree("list", "--porcelain").splitlines():
            if line.startswith("worktree "):
                current = entries.setdefault(Path(line.split(" ", 1)[1]).resolve(), [])
            elif line:
                current.append(line)
        return entries

    def _registered_worktrees(self) -> set[Path]:
        return set(self._worktree_entries())

    def _usable_worktree(self, path: Path) -> bool:
        """A registered worktree git can open. Not one a kill left half-made: `git worktree add` locks
        its new worktree ("initializing") until the checkout is done, and may not have written its `.git`
        file yet (a resumed plan_episode failed on both)."""
        entry = self._worktree_entries().get(path.resolve())
        if entry is None or any(line.startswith("locked") for line in entry):
            return False
        try:
            git.Repo(path).head.commit  # noqa: B018 - raises if there is no checkout to resume in
        except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
            return False
        return True

    def _discard_worktree(self, path: Path) -> None:
        """Remove a worktree in whatever state it is: locked, without its `.git` file, or unregistered."""
        if path.resolve() in self._registered_worktrees():
            with contextlib.suppress(git.GitCommandError):
                self.repo.git.worktree("unlock", str(path))  # (prune skips a locked worktree)
        if path.exists():
            shutil.rmtree(path)
        self.repo.git.worktree("prune")

    def remove_episode(self, n: int, delete_branch: bool = False) -> None:
        """Remove the episode's worktree (its branch, the history of its trials, is kept by default)."""
        self._discard_worktree(self.episode_path(n))
        if delete_branch and self.episode_branch(n) in [h.name for h in self.repo.heads]:
            self.repo.git.branch("-D", self.episode_branch(n))

    def _episode_repo(self, n: int) -> git.Repo:
        path = self.episode_path(n)
        if path.resolve() not in self._registered_worktrees():
            raise WorkspaceError(f"episode {n} has no worktree at {path}: call create_episode({n}) first")
        return git.Repo(path)

    def episode_base(self, n: int) -> str:
        """The campaign commit the episode started from (its fork point)."""
        return self.repo.git.merge_base(CAMPAIGN_BRANCH, self.episode_branch(n))

    def snapshot_episode(self, n: int, message: str) -> str | None:
        """Commit everything in the episode worktree on its branch (trial history); None if unchanged."""
        wt = self._episode_repo(n)
        wt.git.add("-A")
        return self._commit_staged(wt, message)

    def candidate_diff(self, n: int) -> CandidateDiff:
        """Changed paths of the episode worktree (committed or not) vs its base, classified."""
        wt = self._episode_repo(n)
        base = self.episode_base(n)
        wt.git.add("-A")
        names = wt.git.diff("--cached", "--no-renames", "--name-only", base).splitlines()
        changed = sorted(n_ for n_ in names if n_)
        editable = [p for p in changed if _matches(p, self.editable_files)]
        evidence = [p for p in changed if p not in editable and _matches(p, EVIDENCE_PATTERNS)]
        forbidden = [p for p in changed if p not in editable and p not in evidence]
        patch = wt.git.diff("--cached", base, "--", *editable) if editable else ""
        return CandidateDiff(episode=n, base_sha=base, changed=changed, editable=editable,
                             evidence=evidence, forbidden=forbidden, patch=patch)

    def squash_promote(self, n: int, message: str, overrides: dict[str, Path] | None = None) -> str:
        """One commit on the campaign branch with the episode's editable files (+ plans/profiles).

        `overrides` maps an editable path to a file whose content is promoted instead (e.g. the best
        fast-episode trial's kernel, kept by sha256). Refuses a diff with forbidden paths.
        """
        diff = self.candidate_diff(n)
        if diff.forbidden:
            raise WorkspaceError(
                f"episode {n} changed files outside {self.editable_files}: {diff.forbidden}; "
                "reject the candidate instead of promoting it")
        self._checkout_campaign()
        wt_root = self.episode_path(n)
        paths = list(diff.editable) + list(diff.evidence)
        for rel in (overrides or {}):
            if not _matches(rel, self.editable_files):
                raise WorkspaceError(f"override {rel!r} is not an editable file {self.editable_files}")
            if rel not in paths:
                paths.append(rel)
        for rel in paths:
            src = Path((overrides or {}).get(rel, wt_root / rel))
            dst = self.root / rel
            if src.is_file():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
            elif dst.exists():
                dst.unlink()
        return self.commit(paths, message) if paths else self.head_sha()

    # ---- tamper detection -----------------------------------------------------------------------
    def protected_digest(self, path: Path) -> dict[str, str]:
        """sha256 of every protected file under a worktree (op/, harness, skills, past memory records).

        Only the directories the protected patterns name are walked (skill links are followed, loops
        are not). Compare the digests taken before and after an agent run with `digest_changes`.
        """
        path = Path(path)
        digest: dict[str, str] = {}
        bases = sorted({pattern.split("*", 1)[0].rsplit("/", 1)[0] if "/" in pattern.split("*", 1)[0]
                        else "" for pattern in self.protected_patterns})
        for base in bases:
            start = path / base if base else path
            for full in _walk_files(start, recurse=bool(base)):
                rel = full.relative_to(path).as_posix()
                if _matches(rel, self.protected_patterns) and rel not in digest:
                    digest[rel] = sha256_file(full)
        return digest


def _walk_files(start: Path, recurse: bool) -> list[Path]:
    """Files under `start` (following directory links once each), or only its direct files."""
    if not start.is_dir():
        return []
    if not recurse:
        return [p for p in start.iterdir() if p.is_file()]
    files: list[Path] = []
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(start, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:
            dirnames[:] = []
            continue
        seen.add(real)
        files.extend(Path(dirpath) / name for name in filenames if (Path(dirpath) / name).is_file())
    return files


def digest_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Protected paths added, removed or modified between two `protected_digest` snapshots."""
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
