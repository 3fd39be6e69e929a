"""What the campaign's nodes do differently for a command task, each in one call (the glue the nodes use
where a SOL/native operator installs `op/`, writes the reference `kernel.py`, or freezes `kernel.py`).

A command-task workspace holds the tree at `tree/` (its own copy, `.git` dropped); git tracks only the
tree's editable files, so V0 is the unmodified tree, an episode's diff is its edits to editable files,
and a promotion squashes exactly those. A "kernel directory" of a command task is any directory with the
editable files at their tree paths (`CommandTaskEvaluator` lays them over the pristine tree).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from aka_graph.tasks.guard import HarnessGuard
from aka_graph.tasks.loader import LoadedTask
from aka_graph.tasks.private_cases import write_public_task
from aka_graph.tasks.seeding import TREE_DIR, SeededTree, fill_worktree, seed_workspace


def workspace_editable(loaded: LoadedTask) -> list[str]:
    """The editable globs as workspace paths (for `CampaignWorkspace.editable_files`)."""
    return [f"{TREE_DIR}/{pattern}" for pattern in loaded.task.editable]


def install_task(ws: Any, loaded: LoadedTask) -> SeededTree:
    """preprocess: seed the workspace's copy of the tree (idempotent), commit its editable files as V0,
    keep a copy of the task file in `op/` for the agents to read, and tell the workspace what is editable.
    In production mode the copy leaves the cases out: they are the task's private shapes."""
    op_copy = Path(ws.root) / "op" / loaded.path.name
    op_copy.parent.mkdir(parents=True, exist_ok=True)
    if getattr(ws, "identity", {}).get("production"):
        write_public_task(loaded, op_copy)
    else:
        shutil.copyfile(loaded.path, op_copy)
    ws.commit([f"op/{loaded.path.name}"], f"Command task {loaded.name}: task file installed")
    seeded = seed_workspace(loaded, Path(ws.root))
    ws.editable_files = workspace_editable(loaded)
    return seeded


def freeze_editable(loaded: LoadedTask, tree: Path, dest: Path) -> Path:
    """A frozen kernel directory: the editable files of `tree` (V0: the workspace's copy; a trial: its
    worktree's) copied to `dest`, which nothing edits afterwards."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for rel in _editable_in(loaded, Path(tree)):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(tree) / rel, dest / rel)
    return dest


def _editable_in(loaded: LoadedTask, tree: Path) -> list[str]:
    from aka_graph.tasks.job_runner import tree_files

    return [rel for rel in tree_files(tree) if loaded.is_editable(rel)]


def prepare_worktree(ws_root: Path, worktree: Path) -> Path:
    """implement: the episode worktree gets the rest of the tree (git gave it the editable files)."""
    fill_worktree(Path(ws_root) / TREE_DIR, Path(worktree))
    return Path(worktree) / TREE_DIR


def guard_for(loaded: LoadedTask, ws_root: Path) -> HarnessGuard:
    """The harness guard of a worktree's tree, reverting from the workspace's pristine copy."""
    return HarnessGuard(loaded, Path(ws_root) / TREE_DIR)


def task_of(target: Any) -> LoadedTask | None:
    """The command task a campaign target names (None for a SOL or native operator)."""
    from aka_graph.tasks.loader import load_task

    return load_task(Path(target.op_dir)) if getattr(target, "op_format", None) == "command" else None


def configure_workspace(ws: Any, target: Any) -> None:
    """A reopened workspace of a command-task campaign: its editable files are the task's (once per
    workspace handle; a resumed campaign's nodes call this with the checkpointed target)."""
    if getattr(ws, "command_task_configured", False):
        return
    loaded = task_of(target)
    if loaded is not None:
        ws.editable_files = workspace_editable(loaded)
        ws.command_task_configured = True


def promotion_overrides(loaded: LoadedTask, frozen: Path) -> dict[str, Path]:
    """promote: the workspace paths a frozen candidate's editable files are squashed onto."""
    return {f"{TREE_DIR}/{rel}": Path(frozen) / rel for rel in _editable_in(loaded, Path(frozen))}
