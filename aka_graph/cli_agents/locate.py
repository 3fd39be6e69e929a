"""Finding a CLI's executable: `AKA_<CLI>_BIN`, else PATH, else the project-local npm prefix.

`scripts/install_agent_clis.sh` installs the pinned CLIs into `<repo>/.ci/npm` (override the prefix
with `AKA_NPM_PREFIX`), so a checkout works without touching the user's global npm installation.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
INSTALL_COMMAND = "bash scripts/install_agent_clis.sh"
PI_MIN_NODE = (22, 19, 0)


def npm_prefix() -> Path:
    return Path(os.environ.get("AKA_NPM_PREFIX") or REPO_ROOT / ".ci" / "npm")


def find_executable(cli: str, names: tuple[str, ...]) -> Path | None:
    """The executable for `cli` (env key suffix, e.g. "CLAUDE"), trying each of `names`."""
    override = os.environ.get(f"AKA_{cli.upper()}_BIN")
    if override:
        path = Path(override).expanduser()
        return path if path.is_file() and os.access(path, os.X_OK) else None
    for name in names:
        found = shutil.which(name)
        if found:
            return Path(found)
    for name in names:
        local = npm_prefix() / "bin" / name
        if local.is_file() and os.access(local, os.X_OK):
            return local
    return None


def is_node_script(path: Path) -> bool:
    """Whether `path` is a JavaScript file run through `#!/usr/bin/env node` (not a native binary)."""
    try:
        with open(path, "rb") as f:
            head = f.readline(200)
    except OSError:
        return False
    return head.startswith(b"#!") and b"node" in head


@lru_cache(maxsize=16)
def node_version(node: str) -> tuple[int, int, int] | None:
    try:
        out = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"v?(\d+)\.(\d+)\.(\d+)", out.strip())
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def find_node(minimum: tuple[int, int, int]) -> Path | None:
    """A Node.js at least `minimum`: `AKA_NODE_BIN`, the project-local prefix, then PATH."""
    candidates: list[Path] = []
    if os.environ.get("AKA_NODE_BIN"):
        candidates.append(Path(os.environ["AKA_NODE_BIN"]).expanduser())
    candidates.append(npm_prefix() / "bin" / "node")
    on_path = shutil.which("node")
    if on_path:
        candidates.append(Path(on_path))
    for node in candidates:
        if node.is_file() and (node_version(str(node)) or (0, 0, 0)) >= minimum:
            return node
    return None
