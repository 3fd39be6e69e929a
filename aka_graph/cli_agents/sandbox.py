"""Filesystem isolation of an agent process: the worktree is the only readable part of the campaign.

Coding CLIs run with their own permission checks switched off (`--dangerously-skip-permissions`, Codex's
sandbox bypassed), so what an agent can read is decided here, outside it. With bubblewrap the process
sees an allow-list: system directories, the Python/Node runtimes and the CLI's own install read-only,
its private home and the worktree writable, the campaign's git directory read-only (its own worktree
entry writable), a fresh `/tmp`, `/dev` with only the GPU nodes, the host's network (the model server,
loopback or remote). Everything else — the operator's private files, the checkpoints, results, ledger,
report, transcripts and other episodes — is simply absent; paths listed as `hidden` are additionally
covered with an empty tmpfs in case an allowed directory contains them.

Without bubblewrap, an unprivileged mount namespace (`unshare`) hides the `hidden` paths (a deny-list:
weaker, so `auto` uses it only where bubblewrap cannot run, and says so once).
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import site
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

log = logging.getLogger(__name__)

SandboxMode = Literal["auto", "bwrap", "userns", "none"]
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc")
GPU_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
# Never bound whole: each holds far more than an agent needs (and the operator's own files, often).
BROAD_ROOTS = frozenset({"/", "/root", "/home", "/tmp", "/var", "/srv", "/mnt", "/media", "/run", "/work"})


class AgentSandboxError(RuntimeError):
    """The requested agent isolation cannot be set up here; the message says what to install or pass."""


class AgentSandbox(BaseModel):
    """What one agent process may see besides the runtimes: `writable` (the worktree), `readable`
    (extra read-only paths, e.g. skills), and `hidden` paths that must never be visible."""

    model_config = ConfigDict(frozen=True)

    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = Field(default=(), description="private paths, hidden even under a bound one")
    mode: SandboxMode = "auto"

    def with_paths(self, *, writable: Iterable[Path] = (), readable: Iterable[Path] = ()) -> AgentSandbox:
        return self.model_copy(
            update={
                "writable": (*self.writable, *writable),
                "readable": (*self.readable, *readable),
            }
        )


@lru_cache(maxsize=1)
def bwrap_works() -> str | None:
    """The bubblewrap binary when it can create a sandbox here, else None."""
    exe = shutil.which("bwrap")
    if exe is None:
        return None
    probe = subprocess.run(
        [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--", "true"], capture_output=True, timeout=30
    )
    return exe if probe.returncode == 0 else None


@lru_cache(maxsize=1)
def userns_works() -> bool:
    """Whether `unshare` can make a private mount namespace here (as root, or through a user namespace)."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        [*_unshare_prefix(), "sh", "-c", "mount -t tmpfs tmpfs /mnt"], capture_output=True, timeout=30
    )
    return probe.returncode == 0


def _unshare_prefix() -> list[str]:
    user = [] if os.geteuid() == 0 else ["--user", "--map-current-user"]
    return ["unshare", *user, "--mount", "--propagation", "private"]


def resolve_mode(mode: SandboxMode) -> Literal["bwrap", "userns", "none"]:
    if mode == "none":
        return "none"
    if mode in ("auto", "bwrap") and bwrap_works():
        return "bwrap"
    if mode == "bwrap":
        raise AgentSandboxError("agent isolation 'bwrap' was asked for but bubblewrap cannot run: install it")
    if userns_works():
        if mode == "auto":
            log.warning("bubblewrap unavailable: agents run in a mount namespace that hides private paths")
        return "userns"
    raise AgentSandboxError(
        "agents cannot be isolated here (neither bubblewrap nor `unshare --mount` works): install "
        "bubblewrap or allow unprivileged user namespaces"
    )


def runtime_paths(environ: Mapping[str, str], executable: Path) -> list[Path]:
    """Read-only paths the CLI and the tools it runs need: its own install, Node, Python (prefix,
    site-packages, the user's `pip --user` site), this package (agents call `python -m aka_graph`), and
    the directories on PATH."""
    paths: list[Path] = [executable.parent, executable.resolve().parent]
    for parent in executable.resolve().parents:  # an npm install: <prefix>/lib/node_modules/<pkg>/...
        if parent.name == "node_modules":
            paths.append(parent.parent.parent)
            break
    node = shutil.which("node", path=environ.get("PATH"))
    if node:
        paths.append(Path(node).resolve().parent.parent)
    paths += [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent.parent]
    paths += [Path(p) for p in sysconfig.get_paths().values()]
    user_site = environ.get("PYTHONUSERBASE")
    paths += [Path(user_site)] if user_site else [Path(site.getuserbase())]
    paths.append(Path(__file__).resolve().parents[1])  # the aka_graph package (its sources are public)
    for entry in environ.get("PATH", "").split(os.pathsep):
        if entry:
            path = Path(entry)
            paths.append(path.parent if path.name == "shims" else path)  # pyenv shims exec ../libexec
    return paths


def _usable(paths: Iterable[Path], hidden: Sequence[Path]) -> list[Path]:
    """Existing, deduplicated, never a broad root or an ancestor of a hidden path."""
    seen: dict[str, Path] = {}
    for path in paths:
        try:
            real = Path(os.path.abspath(path))
        except (OSError, ValueError):
            continue
        if str(real) in BROAD_ROOTS or not real.exists() or real == Path.home():
            continue
        if any(h == real or h.is_relative_to(real) for h in hidden):
            continue
        seen.setdefault(str(real), real)
    return sorted(seen.values(), key=lambda p: (len(p.parts), str(p)))


def git_paths(worktree: Path) -> tuple[list[Path], list[Path]]:
    """(read-only, writable) git directories a worktree needs: the repository's, and its own entry."""
    dot_git = worktree / ".git"
    if not dot_git.is_file():
        return [], []
    line = dot_git.read_text().strip()
    if not line.startswith("gitdir:"):
        return [], []
    own = (worktree / line.split(":", 1)[1].strip()).resolve()
    common = own.parent.parent if own.parent.name == "worktrees" else own
    return [common], [own]


def symlink_targets(directories: Iterable[Path], depth: int = 3) -> list[Path]:
    """What the symlinks under these directories point to (skill links, a home's linked login file)."""
    found: list[Path] = []
    for directory in directories:
        if not directory.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(directory):
            rel_depth = len(Path(dirpath).relative_to(directory).parts)
            if rel_depth >= depth:
                dirnames[:] = []
            for name in [*dirnames, *filenames]:
                entry = Path(dirpath) / name
                if entry.is_symlink() and entry.exists():
                    found.append(entry.resolve())
            dirnames[:] = [d for d in dirnames if not (Path(dirpath) / d).is_symlink()]
    return found


def bwrap_argv(
    sandbox: AgentSandbox, argv: Sequence[str], *, cwd: Path, readable: Iterable[Path], bwrap: str = "bwrap"
) -> list[str]:
    """`bwrap ... -- argv`: the allow-list view described in the module docstring."""
    hidden = [Path(os.path.abspath(h)) for h in sandbox.hidden]
    writable = _usable([*sandbox.writable, cwd], hidden=[])
    ro = [p for p in _usable([*readable, *sandbox.readable], hidden) if p not in writable]
    args = [bwrap, "--die-with-parent", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if os.geteuid() == 0:
        args += ["--cap-drop", "ALL"]  # root inside could otherwise remount its way out
    for d in SYSTEM_DIRS:
        if Path(d).is_symlink():
            args += ["--symlink", os.readlink(d), d]
        else:
            args += ["--ro-bind-try", d, d]
    args += ["--proc", "/proc", "--dev", "/dev", "--ro-bind-try", "/sys", "/sys", "--tmpfs", "/tmp"]
    for node in GPU_NODES + tuple(sorted(str(p) for p in Path("/dev").glob("nvidia[0-9]*"))):
        args += ["--dev-bind-try", node, node]
    for path in ro:
        args += ["--ro-bind", str(path), str(path)]
    for path in writable:
        args += ["--bind", str(path), str(path)]
    for path in hidden:
        if path.is_dir():
            args += ["--tmpfs", str(path)]
        elif path.exists():
            args += ["--ro-bind", "/dev/null", str(path)]
    args += ["--chdir", str(cwd)]
    return [*args, "--", *argv]


def userns_argv(sandbox: AgentSandbox, argv: Sequence[str], *, cwd: Path) -> list[str]:
    """A private mount namespace where every hidden path is covered (directories by an empty tmpfs,
    files by /dev/null); the rest of the host stays as it is."""
    mounts: list[str] = []
    for path in (Path(os.path.abspath(h)) for h in sandbox.hidden):
        if path.is_dir():
            mounts.append(f"mount -t tmpfs -o mode=000,size=4k tmpfs {shlex.quote(str(path))}")
        elif path.exists():
            mounts.append(f"mount --bind /dev/null {shlex.quote(str(path))}")
    script = " && ".join([*mounts, f"cd {shlex.quote(str(cwd))}", 'exec "$@"'])
    return [*_unshare_prefix(), "sh", "-c", script, "aka-agent-sandbox", *argv]


def sandboxed_argv(
    sandbox: AgentSandbox | None,
    argv: Sequence[str],
    *,
    cwd: Path,
    environ: Mapping[str, str],
    executable: Path,
    home: Path | None = None,
    extra_readable: Iterable[Path] = (),
) -> list[str]:
    """`argv` wrapped in the isolation `sandbox` asks for (unchanged when it is None or 'none')."""
    if sandbox is None:
        return list(argv)
    mode = resolve_mode(sandbox.mode)
    if mode == "none":
        return list(argv)
    if mode == "userns":
        return userns_argv(sandbox, argv, cwd=cwd)
    git_ro, git_rw = git_paths(cwd)
    homes = [home] if home is not None else []
    sandbox = sandbox.with_paths(writable=[*homes, *git_rw])
    readable = [
        *runtime_paths(environ, executable),
        *git_ro,
        *symlink_targets([cwd / ".claude", cwd / ".agents", cwd / ".qoder", *homes]),
        *extra_readable,
    ]
    return bwrap_argv(sandbox, argv, cwd=cwd, readable=readable, bwrap=bwrap_works() or "bwrap")
