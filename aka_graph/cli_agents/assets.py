"""Workspace assets: this repository's `skills/` made visible to each coding CLI where it looks for
project skills (`.claude/skills`, `.agents/skills`, `.qoder/skills`), inside the workspace only, so
nothing is written to the user's global configuration.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SKILL_DIRS = (".claude/skills", ".agents/skills", ".qoder/skills")
DEFAULT_SKILLS_DIR = Path(__file__).resolve().parents[2] / "skills"


def install_workspace_assets(workspace: Path, skills_dir: Path = DEFAULT_SKILLS_DIR) -> None:
    """Link every skill (a directory holding `SKILL.md`) of `skills_dir` into the workspace's skill
    directories. Idempotent; a stale link is replaced, a user's own directory of the same name is kept.

    Links are relative when the skills live inside the workspace (so a git worktree stays valid when
    moved), absolute otherwise.
    """
    if not workspace.is_dir():
        raise ValueError(f"workspace {workspace} does not exist; create it before installing assets")
    if not skills_dir.is_dir():
        raise ValueError(f"skills directory {skills_dir} does not exist; pass the repository's skills/")
    skills = sorted(p for p in skills_dir.iterdir() if (p / "SKILL.md").is_file())
    if not skills:
        raise ValueError(f"{skills_dir} holds no skill (a directory with a SKILL.md)")
    for rel in SKILL_DIRS:
        target_dir = workspace / rel
        target_dir.mkdir(parents=True, exist_ok=True)
        for skill in skills:
            link = target_dir / skill.name
            source = skill.resolve()
            if source.is_relative_to(workspace.resolve()):
                dest: str | Path = os.path.relpath(source, target_dir.resolve())
            else:
                dest = source
            if link.is_symlink():
                if os.readlink(link) == str(dest):
                    continue
                link.unlink()
            elif link.exists():
                continue
            link.symlink_to(dest, target_is_directory=True)
    _exclude_from_git(workspace)


def _exclude_from_git(workspace: Path) -> None:
    """Keep the links out of `git status` (and so out of candidate diffs) when the workspace is a repo."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--git-path", "info/exclude"],
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return
    if out.returncode != 0:
        return
    exclude = Path(out.stdout.strip())
    exclude = exclude if exclude.is_absolute() else workspace / exclude
    existing = exclude.read_text().splitlines() if exclude.is_file() else []
    wanted = [f"/{rel}/" for rel in SKILL_DIRS if f"/{rel}/" not in existing]
    if wanted:
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with open(exclude, "a") as f:
            f.write("".join(line + "\n" for line in wanted))


def remove_workspace_assets(workspace: Path) -> None:
    """Remove the skill links (not real directories) that `install_workspace_assets` created."""
    for rel in SKILL_DIRS:
        target_dir = workspace / rel
        if not target_dir.is_dir():
            continue
        for entry in target_dir.iterdir():
            if entry.is_symlink():
                entry.unlink()
        if not any(target_dir.iterdir()):
            shutil.rmtree(target_dir)
