"""Runtime binds: read-only host paths a job may see (a venv, a CUDA toolkit), and the ones it never may.

A bind of a broad root, a home directory or a credential directory would hand the candidate the user's
keys or the whole system, so such binds are refused by name, and again after the host resolves symlinks.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

# Any path equal to, or inside, one of these is refused.
FORBIDDEN_TREES = ("/root/.ssh", "/etc/ssh", "/proc", "/sys", "/dev", "/run", "/var/run", "/boot")
# Path components that name credential stores wherever they appear.
CREDENTIAL_NAMES = frozenset(
    {
        ".ssh",
        ".gnupg",
        ".aws",
        ".azure",
        ".kube",
        ".docker",
        ".password-store",
        ".netrc",
        ".git-credentials",
        ".pypirc",
        ".vault-token",
        "gcloud",
        "credentials",
        "shadow",
        "gshadow",
        "sudoers",
    }
)
# Exactly these are refused (too broad), although paths below them may be fine.
BROAD_ROOTS = frozenset({"/", "/usr", "/usr/local", "/home", "/root", "/etc", "/var", "/opt", "/tmp", "/srv"})


class RuntimeBindError(ValueError):
    """A runtime bind that would expose too much; the message names the path and the fix."""


@dataclass(frozen=True)
class RuntimeBind:
    """A read-only bind of host `source` at `dest` inside the sandbox."""

    source: str
    dest: str

    def as_flag(self) -> str:
        return self.source if self.source == self.dest else f"{self.source}={self.dest}"


def parse_runtime_bind(spec: str) -> RuntimeBind:
    """Parse `SRC[=DST]` (both absolute); DST defaults to SRC."""
    source, _, dest = spec.partition("=")
    dest = dest or source
    for path in (source, dest):
        if not path.startswith("/"):
            raise RuntimeBindError(
                f"runtime bind {spec!r}: {path!r} is not absolute; give absolute host paths as SRC[=DST]"
            )
    return RuntimeBind(posixpath.normpath(source), posixpath.normpath(dest))


def bind_problem(path: str, home: str | None = None) -> str | None:
    """Why binding `path` (absolute, normalised) is refused, or None when it is acceptable."""
    path = posixpath.normpath(path)
    if path in BROAD_ROOTS or path.count("/") < 2:
        return f"{path} is a broad root (it would expose most of the host)"
    if path.startswith("/home/") and path.count("/") == 2:
        return f"{path} is a home directory (it holds the user's keys and configuration)"
    if home and posixpath.normpath(home) != "/":
        norm_home = posixpath.normpath(home)
        if path == norm_home:
            return f"{path} is the home directory of the host user"
        if norm_home.startswith(path + "/"):
            return f"{path} contains the home directory {norm_home}"
    for tree in FORBIDDEN_TREES:
        if path == tree or path.startswith(tree + "/"):
            return f"{path} is inside {tree}, which must never enter a sandbox"
    components = set(path.strip("/").split("/"))
    hit = components & CREDENTIAL_NAMES
    if hit:
        return f"{path} is a credential location ({', '.join(sorted(hit))})"
    return None


def check_runtime_bind(bind: RuntimeBind, home: str | None = None, resolved: str | None = None) -> None:
    """Raise `RuntimeBindError` if the bind (or its symlink-resolved source) is not allowed."""
    for label, path in (("source", bind.source), ("resolved source", resolved), ("destination", bind.dest)):
        if path is None:
            continue
        problem = bind_problem(path, home)
        if problem:
            raise RuntimeBindError(
                f"runtime bind {bind.as_flag()!r} refused: {label} {problem}; bind a narrower directory "
                "that holds only the runtime (e.g. a virtualenv or /usr/local/cuda-12.8)"
            )
