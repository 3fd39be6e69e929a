"""The host memory this process may use: /proc/meminfo, bounded by the memory cgroup it runs in.

Why: inside a container (`docker --memory`, a Kubernetes limit, a Slurm job's cgroup) /proc/meminfo
still shows the whole machine. A CPU evaluation that sized its plan and its host check by it would pass
the check and then be killed by the cgroup's OOM killer half way through a draw, which reads as the
kernel's or the operator's fault. The figures here are the smaller of the machine's and every limiting
cgroup's (cgroup v2 `memory.max`, or v1's hierarchical limit), so a limit set on an ancestor counts too.

Standard library only: the GPU-side harness imports it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

UNLIMITED = 1 << 60  # v1 writes "no limit" as a page-rounded 2**63 - 1; anything this large is none
DEFAULT_TOTAL = 16 << 30  # when /proc/meminfo cannot be read at all


@dataclass(frozen=True)
class HostMemory:
    total: int  # bytes this process's memory may ever reach
    available: int  # bytes it may still take now (MemAvailable, less the cgroup's own use)
    cgroup_limit: int | None  # the limiting cgroup's limit, when one is below the machine's memory

    def describe(self) -> str:
        """How the figures were bounded, for a message ("this host" or its memory cgroup)."""
        if self.cgroup_limit is None:
            return "this host"
        return f"this host (its memory cgroup's limit of {self.cgroup_limit / (1 << 30):.1f} GiB)"


def _meminfo(proc: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in (proc / "meminfo").read_text().splitlines():
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts and parts[0].isdigit():
                found[key] = int(parts[0]) * 1024
    return found


def _number(path: Path) -> int | None:
    """A limit or a usage file's value; None for "max", an unlimited value or an unreadable file."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if not text.isdigit():
        return None
    value = int(text)
    return value if value < UNLIMITED else None


def _stat(path: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                found[key] = int(value)
    return found


def _memberships(proc: Path) -> tuple[str | None, str | None]:
    """(the v2 path, the v1 memory controller's path) of this process, from /proc/self/cgroup."""
    v2 = v1 = None
    with contextlib.suppress(OSError):
        for line in (proc / "self" / "cgroup").read_text().splitlines():
            parts = line.split(":", 2)
            if len(parts) != 3:
                continue
            hierarchy, controllers, path = parts
            if hierarchy == "0" and controllers == "":
                v2 = path
            elif "memory" in controllers.split(","):
                v1 = path
    return v2, v1


def _own_dir(mount: Path, path: str) -> Path:
    """The cgroup's directory under its mount. A container with its own cgroup namespace mounts its
    cgroup as the root, so a path that is not there means the mount itself."""
    here = mount / path.lstrip("/")
    return here if here.is_dir() else mount


def _cgroup_v2(mount: Path, path: str) -> list[tuple[int, int]]:
    """(limit, room) of every limited cgroup from this one up to the mount: room is the limit less what
    the cgroup holds, not counting inactive file pages (the kernel reclaims those before it kills)."""
    found = []
    here = _own_dir(mount, path)
    while True:
        limit = _number(here / "memory.max")
        if limit is not None:
            used = _number(here / "memory.current") or 0
            used -= _stat(here / "memory.stat").get("inactive_file", 0)
            found.append((limit, max(0, limit - max(0, used))))
        if here == mount or mount not in here.parents:
            return found
        here = here.parent


def _cgroup_v1(mount: Path, path: str) -> list[tuple[int, int]]:
    here = _own_dir(mount, path)
    stat = _stat(here / "memory.stat")
    limit = stat.get("hierarchical_memory_limit")  # the smallest limit on the way to the root
    if limit is None or limit >= UNLIMITED:
        limit = _number(here / "memory.limit_in_bytes")
    if limit is None:
        return []
    used = (_number(here / "memory.usage_in_bytes") or 0) - stat.get("total_inactive_file", 0)
    return [(limit, max(0, limit - max(0, used)))]


def read(proc: Path = Path("/proc"), cgroup_root: Path = Path("/sys/fs/cgroup")) -> HostMemory:
    """This process's memory: the machine's, or less where a memory cgroup limits it."""
    info = _meminfo(proc)
    total = info.get("MemTotal", DEFAULT_TOTAL)
    available = info.get("MemAvailable", total)
    v2, v1 = _memberships(proc)
    limits: list[tuple[int, int]] = []
    if v2 is not None and (cgroup_root / "cgroup.controllers").exists():  # the unified hierarchy
        limits = _cgroup_v2(cgroup_root, v2)
    if not limits and v1 is not None and (cgroup_root / "memory").is_dir():
        limits = _cgroup_v1(cgroup_root / "memory", v1)
    bound = [(limit, room) for limit, room in limits if limit < total]
    if not bound:
        return HostMemory(total, available, None)
    limit = min(limit for limit, _room in bound)
    room = min(room for _limit, room in bound)
    return HostMemory(limit, min(available, room), limit)
