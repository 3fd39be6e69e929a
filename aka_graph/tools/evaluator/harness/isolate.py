"""The worker's jail, by unprivileged user namespaces (`unshare`, util-linux): works where bubblewrap is
missing, inside a sandbox job as well as on a bare host (issue 13, classes 5-8).

    unshare --user --map-root-user --pid --fork --kill-child --mount-proc --net  sh -c JAIL  ...worker argv

- its own PID namespace: the worker is PID 1 there. It cannot see (or signal, or read the command line
  of) the trusted parent or anything else on the host; whatever it forks is re-parented to it, never to
  init; when it dies the kernel kills every process of the namespace, and `--kill-child` kills it when
  `unshare` dies, which in turn gets SIGKILL when the parent dies (PR_SET_PDEATHSIG set before exec).
  Nothing outlives the evaluator.
- no network (an empty network namespace).
- a read-only view of every file system but its scratch directory: JAIL bind-mounts the scratch onto
  itself and remounts every other mount read-only, then enters a second user and mount namespace, which
  locks those flags (a process that is root in the first namespace could otherwise remount them
  read-write).

Where `unshare` cannot do this (no user namespaces, an old util-linux), `argv_prefix` returns None and
the caller says so in the result (modes.py); production mode refuses to run then.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import hostmem

OUTER = ["--user", "--map-root-user", "--pid", "--fork", "--kill-child", "--mount-proc", "--net"]
# $1: the scratch directory; $2: directories to cover with an empty read-only tmpfs, one per line (the
# operator's own and the blob root: opview.py); the rest: the command. /proc (fresh), /dev (device nodes)
# stay as they are. Mounts made here are locked by the inner namespace: the worker cannot unmount them.
JAIL = r"""
scratch="$1"; hide="$2"; shift 2
mount --bind "$scratch" "$scratch" || exit 97
set -f; old_ifs=$IFS; IFS='
'
for dir in $hide; do
  mount -t tmpfs -o ro,size=4k,mode=0555 aka_hidden "$dir" || exit 96
done
IFS=$old_ifs; set +f
awk '{print $5}' /proc/self/mountinfo | sort -u | while read -r raw; do
  mp=$(printf '%b' "$raw")
  case "$mp" in /proc|/proc/*|/dev|/dev/*|"$scratch") continue ;; esac
  mount -o remount,bind,ro "$mp" 2>/dev/null
done
# /dev keeps its device nodes (writing to a device node is allowed on a read-only mount) but no
# candidate may add, remove or leave files there: /dev/shm is a fresh private tmpfs per worker (gone with
# its mount namespace) and /dev itself read-only (a long-lived evaluator, serve.py, runs many workers in
# one job: anything left there would reach the next candidate, and an unlinked /dev/null broke the next
# spool; round 5's red team did both). Best effort: a host where /dev cannot be sealed keeps the rest of
# the jail, and `dev_sealed` tells the warm evaluator, which then does not run.
if [ -d /dev/shm ]; then
  mount -t tmpfs -o size=1g,mode=1777,nosuid,nodev aka_shm /dev/shm 2>/dev/null
fi
if awk '$5 == "/dev" {found=1} END {exit !found}' /proc/self/mountinfo; then
  mount -o remount,bind,ro /dev 2>/dev/null
fi
touch /.aka_jail_probe 2>/dev/null && exit 98
cd "$scratch" 2>/dev/null || cd /  # a working directory opened before the bind sees the read-only mount
exec unshare --user --map-root-user --mount -- "$@"
"""
# Set by the sandbox that runs the harness (LocalSandbox): "bwrap" or "unshare" when the whole job is
# isolated already (inside bubblewrap the worker's own jail cannot mount a /proc). Read by the trusted
# parent only: the worker's environment never carries it (worker_proc.INHERITED).
SANDBOX_ISOLATION_VAR = "AKA_SANDBOX_ISOLATION"
JAIL_EXIT = {
    96: "could not hide the operator's files",
    97: "could not bind the scratch directory",
    98: "could not make the file systems read-only",
}


@functools.cache
def unavailable() -> str | None:
    """Why the jail cannot be built here, or None (probed once per process, ~10 ms). AKA_WORKER_JAIL=0
    switches it off (a host where the GPU runtime misbehaves in a user namespace; say so in the result)."""
    import os

    if os.environ.get("AKA_WORKER_JAIL", "1") == "0":
        return "disabled by AKA_WORKER_JAIL=0"
    tools = [name for name in ("unshare", "mount", "awk", "sh") if shutil.which(name) is None]
    if tools:
        return f"missing {', '.join(tools)}"
    # the directory workers' scratch lives in (TMPDIR: in a sandbox job, the job's own, the one place
    # writable there; the host's /tmp is read-only inside a job, so probing it called nested jails broken)
    probe = Path(tempfile.gettempdir())
    try:
        proc = subprocess.run(
            ["unshare", *OUTER, "sh", "-c", JAIL, "jail", str(probe), "", "true"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare failed to start ({exc})"
    if proc.returncode != 0:
        why = JAIL_EXIT.get(proc.returncode) or proc.stderr.strip()[-300:] or f"exit {proc.returncode}"
        return f"user namespaces are not usable here ({why})"
    return None


@functools.cache
def dev_sealed() -> bool:
    """Whether the jail gives workers a read-only /dev and a private /dev/shm here (probed once): what a
    long-lived evaluator (serve.py) needs, since its workers share one job. The probe writes a marker
    into /dev/shm inside the jail and checks that it is not there outside, and that /dev refuses a file."""
    if unavailable() is not None:
        return False
    import os

    marker = f"aka_jail_probe_{os.getpid()}"
    check = f"touch /dev/{marker} 2>/dev/null && {{ rm -f /dev/{marker}; exit 1; }}; touch /dev/shm/{marker}"
    scratch = Path(tempfile.gettempdir())
    try:
        proc = subprocess.run(
            ["unshare", *OUTER, "sh", "-c", JAIL, "jail", str(scratch), "", "sh", "-c", check],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    leaked = Path("/dev/shm", marker)
    if leaked.exists():
        with contextlib.suppress(OSError):
            leaked.unlink()
        return False
    return proc.returncode == 0


def argv_prefix(scratch: Path, hidden: list[Path] | None = None) -> list[str] | None:
    """The command prefix that runs a command jailed with `scratch` writable and each of `hidden`
    (directories) covered by an empty read-only mount, or None (see module)."""
    if unavailable() is not None:
        return None
    cover = "\n".join(str(p) for p in hidden or [] if "\n" not in str(p))
    return ["unshare", *OUTER, "sh", "-c", JAIL, "jail", str(scratch), cover]


def die_with_parent() -> None:
    """For preexec_fn: PR_SET_PDEATHSIG(SIGKILL), kept across exec, so the process (and with it the
    jail) dies when the trusted parent does, even before the worker's own code runs; and the worker's
    memory limit."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6").prctl(1, int(signal.SIGKILL), 0, 0, 0)
    limit_memory()


def host_memory_bytes() -> int:
    """The memory this process may ever use: the machine's, or its memory cgroup's limit if smaller."""
    return hostmem.read().total


def memory_limit_bytes() -> int:
    """The worker's limit on host memory: half the machine (at least 4 GiB), so a kernel that allocates
    without bound fails inside its own process instead of bringing the OOM killer onto the host; never
    above a hard limit the harness was started under (an administrator's, a batch system's)."""
    limit = max(4 << 30, host_memory_bytes() // 2)
    with contextlib.suppress(ImportError, OSError, ValueError):
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
    return limit


def limit_memory() -> None:
    """RLIMIT_DATA (private writable memory: the heap and anonymous mappings, which is where tensors on
    the host live), not RLIMIT_AS: the GPU driver reserves huge address ranges it never backs."""
    with contextlib.suppress(ImportError, OSError, ValueError):
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        resource.setrlimit(resource.RLIMIT_DATA, (memory_limit_bytes(), hard))


def sandbox_isolation() -> str | None:
    """How the sandbox isolated the whole job ("bwrap", "unshare"), or None."""
    import os

    value = os.environ.get(SANDBOX_ISOLATION_VAR, "")
    return value if value in ("bwrap", "unshare") else None
