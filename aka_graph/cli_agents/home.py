"""A private home per CLI, so the sessions, caches and settings a campaign creates never land in the
user's own `~/.claude`, `~/.codex` or `~/.pi`.

The home persists across invocations (a resumed session must find its files there) under
`$AKA_AGENT_HOME_ROOT` or `~/.cache/aka_graph/agent-homes/<cli>` (settings `home` overrides). The user's
login is linked in (a symlink, so a refreshed token stays valid for both); configuration is copied, so
what the CLI writes back stays in the private home.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from aka_graph.cli_agents.settings import SessionSettings


@dataclass(frozen=True)
class HomeLayout:
    """Which of the user's files the CLI needs: `links` (auth) and `copies` (config), both user-relative
    source -> home-relative destination."""

    links: tuple[tuple[str, str], ...] = ()
    copies: tuple[tuple[str, str], ...] = ()


def home_root() -> Path:
    root = os.environ.get("AKA_AGENT_HOME_ROOT")
    if root:
        return Path(root).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "aka_graph" / "agent-homes"


def prepare_home(
    cli: str, settings: SessionSettings, layout: HomeLayout, user_home: Path | None = None
) -> Path:
    """Create (or refresh) the private home of `cli` and return it."""
    home = Path(settings.home).expanduser() if settings.home else home_root() / cli
    home.mkdir(parents=True, exist_ok=True)
    user_home = user_home or Path(os.environ.get("HOME") or Path.home())
    if settings.link_user_auth and user_home.resolve() != home.resolve():
        for src_rel, dst_rel in layout.links:
            _link(user_home / src_rel, home / dst_rel)
        for src_rel, dst_rel in layout.copies:
            src, dst = user_home / src_rel, home / dst_rel
            if src.is_file() and dst_rel not in settings.home_files and not dst.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
    for rel, content in settings.home_files.items():
        dst = home / rel
        if not dst.resolve().is_relative_to(home.resolve()):
            raise ValueError(f"home_files entry {rel!r} points outside the private home {home}")
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.is_symlink():
            dst.unlink()
        text = content if isinstance(content, str) else json.dumps(content, indent=2)
        dst.write_text(text)
    return home


def keep_user_python(env: dict[str, str]) -> dict[str, str]:
    """With HOME moved, Python would lose the user's `pip install --user` packages; keep them visible."""
    if "PYTHONUSERBASE" not in os.environ:
        env["PYTHONUSERBASE"] = str(Path(os.environ.get("HOME") or Path.home()) / ".local")
    return env


def _link(src: Path, dst: Path) -> None:
    if not src.exists():
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.is_symlink() and os.readlink(dst) == str(src):
        return
    if dst.is_symlink() or dst.is_file():
        dst.unlink()
    elif dst.exists():
        return  # a directory the CLI made itself: leave it
    dst.symlink_to(src)
