"""Workspace assets: skills visible where each CLI looks, only inside the workspace, out of git diffs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from aka_graph.cli_agents.assets import (
    DEFAULT_SKILLS_DIR,
    SKILL_DIRS,
    install_workspace_assets,
    remove_workspace_assets,
)


def _skills(tmp_path: Path) -> Path:
    skills = tmp_path / "skills"
    for name in ("evaluate-kernel", "campaign-rules"):
        (skills / name).mkdir(parents=True)
        (skills / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n---\nbody\n")
    (skills / "README.txt").write_text("not a skill")
    return skills


def test_every_skill_is_linked_into_each_clis_skill_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    ws.mkdir()
    skills = _skills(tmp_path)

    install_workspace_assets(ws, skills)
    install_workspace_assets(ws, skills)  # idempotent

    for rel in SKILL_DIRS:
        entries = sorted(p.name for p in (ws / rel).iterdir())
        assert entries == ["campaign-rules", "evaluate-kernel"]
        assert (
            (ws / rel / "evaluate-kernel" / "SKILL.md").read_text().startswith("---\nname: evaluate-kernel")
        )
    assert list(home.iterdir()) == []  # nothing written to the user's global configuration

    remove_workspace_assets(ws)
    assert not any((ws / rel).exists() for rel in SKILL_DIRS)
    assert (skills / "evaluate-kernel" / "SKILL.md").exists()  # removing links never touches the skills


def test_links_stay_out_of_git_status_in_a_repository(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "kernel.py").write_text("x = 1\n")
    install_workspace_assets(ws, _skills(tmp_path))
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=ws, capture_output=True, text=True, check=True
    )
    assert status.stdout.strip() == "?? kernel.py"


def test_a_users_own_skill_directory_is_left_alone(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    own = ws / ".claude" / "skills" / "evaluate-kernel"
    own.mkdir(parents=True)
    (own / "SKILL.md").write_text("mine")
    install_workspace_assets(ws, _skills(tmp_path))
    assert (own / "SKILL.md").read_text() == "mine" and not own.is_symlink()


def test_bad_paths_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        install_workspace_assets(tmp_path / "missing", _skills(tmp_path))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="holds no skill"):
        install_workspace_assets(tmp_path, empty)


def test_the_repository_ships_skills_with_frontmatter() -> None:
    skills = sorted(p for p in DEFAULT_SKILLS_DIR.iterdir() if (p / "SKILL.md").is_file())
    assert len(skills) >= 3
    for skill in skills:
        text = (skill / "SKILL.md").read_text()
        assert text.startswith("---\n") and f"name: {skill.name}\n" in text and "\ndescription: " in text
