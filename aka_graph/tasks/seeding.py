"""Seed a campaign from an existing source tree (one already on the host, e.g. inside a container image).

Each workspace gets its own copy (`cp --reflink=auto`: a copy-on-write clone where the filesystem allows,
a plain copy otherwise), without the tree's own `.git`, so the campaign's history starts clean; only the
editable files enter the campaign's git (the rest of the copy is ignored through `.git/info/exclude`,
which every worktree of the repository shares). An episode worktree is filled the same way from the
workspace's copy: git checks out the editable files, the copy supplies everything else.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import git

from aka_graph.tasks.loader import LoadedTask

TREE_DIR = "tree"


@dataclass(frozen=True)
class SeededTree:
    path: Path
    method: str  # "cp --reflink=auto" or "copytree"
    editable: list[str]
    commit: str | None = None


def copy_tree(source: Path, dest: Path, *, keep_existing: bool = False) -> str:
    """Copy `source`'s contents into `dest` (its `.git` left behind); returns the method used.
    `keep_existing` keeps files already in `dest` (an episode's checked-out editable files)."""
    dest.mkdir(parents=True, exist_ok=True)
    entries = [e for e in sorted(Path(source).iterdir()) if e.name != ".git"]
    if not entries:
        return "empty"
    cp = shutil.which("cp")
    if cp is not None:
        argv = [cp, "-a", "--reflink=auto", *(["-n"] if keep_existing else []), *map(str, entries), str(dest)]
        if subprocess.run(argv, capture_output=True, check=False).returncode == 0:
            return "cp --reflink=auto"
    for entry in entries:  # no GNU cp: a plain copy
        target = dest / entry.name
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(
                entry,
                target,
                symlinks=True,
                dirs_exist_ok=True,
                copy_function=_keep if keep_existing else shutil.copy2,
            )
        elif not (keep_existing and target.exists()):
            shutil.copy2(entry, target, follow_symlinks=False)
    return "copytree"


def _keep(src: str, dst: str) -> None:
    if not Path(dst).exists():
        shutil.copy2(src, dst)


def seed_workspace(loaded: LoadedTask, repo_root: Path, subdir: str = TREE_DIR) -> SeededTree:
    """Copy the task's tree into `repo_root/subdir` and commit only its editable files (idempotent)."""
    repo = git.Repo(repo_root)
    dest = Path(repo_root) / subdir
    method = "existing"
    if not dest.exists():
        method = copy_tree(loaded.tree, dest)
    exclude = Path(repo.common_dir) / "info" / "exclude"  # shared by every worktree of the repository
    exclude.parent.mkdir(parents=True, exist_ok=True)
    block = exclude_block(loaded, subdir)
    current = exclude.read_text() if exclude.is_file() else ""
    if block not in current:
        exclude.write_text(current + ("\n" if current and not current.endswith("\n") else "") + block)
    editable = [f"{subdir}/{rel}" for rel in loaded.editable_files()]
    repo.git.add("--", *editable)
    commit = None
    if repo.git.diff("--cached", "--name-only"):
        repo.git.commit(
            "-q",
            "--no-verify",
            "-m",
            f"V0: the unmodified tree of {loaded.name} ({len(editable)} editable files)",
        )
        commit = repo.head.commit.hexsha
    return SeededTree(path=dest, method=method, editable=editable, commit=commit)


def exclude_block(loaded: LoadedTask, subdir: str = TREE_DIR) -> str:
    """Git ignore rules under which only the editable files of `subdir/` are visible to git: everything
    in it ignored, directories re-included (git cannot re-include a file inside an ignored directory),
    then the editable globs (and what lies under a directory one names) re-included."""
    lines = [
        f"# aka_graph: {subdir}/ is the task's source tree; only its editable files are tracked",
        f"/{subdir}/**",
        f"!/{subdir}/**/",
    ]
    for pattern in loaded.task.editable:
        lines += [f"!/{subdir}/{pattern}", f"!/{subdir}/{pattern}/**"]
    return "\n".join(lines) + "\n"


def fill_worktree(pristine: Path, worktree: Path, subdir: str = TREE_DIR) -> str:
    """Give an episode worktree the rest of the tree (git holds only the editable files)."""
    return copy_tree(pristine, Path(worktree) / subdir, keep_existing=True)
