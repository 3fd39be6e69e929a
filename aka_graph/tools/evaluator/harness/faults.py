"""Who handles the fatal signals in the worker: a kernel's own handler runs inside the harness's accesses.

Red team round 9b (`redteam9b_segv_guard_pages`): the kernel made its buffers read-only (mprotect) and
caught SIGSEGV with a handler of its own; the harness's next untimed write of fresh inputs faulted into that
handler, which computed the answer there, and the timed call only copied it. Nothing in the worker
changed that the other checks look at: no timer, no thread, no hook, no dispatch entry.

A caught-signal mask cannot tell such a handler from an honest one: Python's faulthandler, LLVM (Triton's
compiler, on a GPU) and crash reporters catch these signals too. Where the handler's code lives can: an
honest one is in a library loaded from a file outside the kernel's directories (libpython, libtriton,
libtorch); the kernel's own is a ctypes or cffi callback (anonymous memory, or libffi's trampolines), JIT
code, or a shared object the kernel built or brought (under its own or the worker's scratch directory, or
a deleted or memfd file). So the worker records each fatal signal's handler before the kernel loads and
names, before each untimed step, a new one whose code is the kernel's.

Only the standard library (ctypes, /proc/self/maps): this runs in the GPU-side harness.
"""

from __future__ import annotations

import ctypes
import faulthandler
import os
import signal
import sys
import time
from typing import Any

# The signals a memory access, an instruction or a system call of the harness's own can raise: a guard page
# (SIGSEGV, SIGBUS), an instruction trap or hardware watchpoint (SIGILL, SIGTRAP, SIGFPE), a seccomp
# filter that traps the harness's system calls (SIGSYS).
FATAL_SIGNALS = tuple(
    getattr(signal, name)
    for name in ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGTRAP", "SIGSYS")
    if hasattr(signal, name)
)
_CALLBACK_LIBRARIES = ("libffi", "_cffi_backend")  # where ctypes/cffi callbacks' trampolines may live


class _Sigaction(ctypes.Structure):
    """glibc's `struct sigaction`, read only: the handler comes first; room enough for the rest."""

    _fields_ = [("handler", ctypes.c_void_p), ("rest", ctypes.c_char * 256)]


def _libc() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.sigaction  # noqa: B018 - present on every libc this harness runs on; checked here once
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


def handler_address(sig: int) -> int | None:
    """The address of `sig`'s C-level handler (0 default, 1 ignored), None where it cannot be read."""
    return _address(_raw(sig))


def code_owner(address: int, maps: str = "/proc/self/maps") -> str:
    """The file mapped at `address` in this process ("" for anonymous memory, "?" when unreadable)."""
    try:
        with open(maps) as f:
            for line in f:
                parts = line.split(maxsplit=5)
                lo, _, hi = parts[0].partition("-")
                if int(lo, 16) <= address < int(hi, 16):
                    return parts[5].strip() if len(parts) > 5 else ""
    except (OSError, ValueError, IndexError):
        return "?"
    return ""


def whose(path: str, own_dirs: tuple[str, ...], since: float | None = None) -> str | None:
    """Why code mapped from `path` is the kernel's own (a phrase for the message), or None when it is a
    library loaded from a file outside the kernel's directories that existed, unchanged, at `since` (a
    file written anywhere after the kernel began is its own: /tmp, when the worker is not jailed; its
    status-change time cannot be set back)."""
    if path == "?":
        return None  # /proc unreadable: nothing is claimed
    if not path or path.startswith("["):
        return "anonymous memory (a ctypes or cffi callback, or JIT code)"
    if path.endswith("(deleted)") or path.startswith("/memfd:"):
        return f"a file removed after loading ({path})"
    name = os.path.basename(path)
    if name.startswith(_CALLBACK_LIBRARIES):
        return f"a ctypes or cffi callback ({name})"
    real = os.path.realpath(path)
    for own in own_dirs:
        if real == own or real.startswith(own.rstrip(os.sep) + os.sep):
            return f"the kernel's own {name}"
    if since is not None:
        try:
            if os.stat(real).st_ctime >= since:
                return f"{name}, a file written while the kernel ran"
        except OSError:
            return f"{name}, a file that is gone"
    return None


# where the worker's builds and temporary files go (worker_proc.worker_env puts each in its scratch directory)
BUILD_VARIABLES = ("TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TMPDIR", "HOME")


def own_directories(kernel_dir: str | os.PathLike[str] | None) -> list[str]:
    """The kernel's directory and the worker's build and temporary directories: code loaded from there is
    the kernel's. A directory holding the interpreter or installed packages (a HOME above a user's Python
    or user site) is never one: libpython's, libtorch's and libtriton's handlers are the runtime's."""
    libraries = [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]
    stdlib = os.path.dirname(os.__file__)
    runtime = [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, stdlib, *libraries)]
    found = []
    for d in [kernel_dir, *(os.environ.get(v) for v in BUILD_VARIABLES)]:
        if not d:
            continue
        real = os.path.realpath(d)
        if real == os.sep or any(r == real or r.startswith(real.rstrip(os.sep) + os.sep) for r in runtime):
            continue
        found.append(real)
    return found


def snapshot() -> dict[int, tuple[int | None, Any]]:
    """Each fatal signal's (C-level handler address, Python-level handler); where faulthandler's handler
    is in front, the handler behind it. faulthandler chains: on a fault it restores the handler it found
    when enabled and raises the signal again, so a kernel's handler installed before `faulthandler.enable()`
    runs on the harness's faults while sigaction() reports faulthandler's, in libpython (red team round
    10). Disabling it for a moment shows what it chains to; every handler is then put back as it was."""
    front = _handlers()
    if not faulthandler.is_enabled() or _LIBC is None:
        return front
    behind, own = _behind_faulthandler()
    return {
        sig: (_address(behind[sig]), front[sig][1]) if front[sig][0] == _address(own[sig]) else front[sig]
        for sig in FATAL_SIGNALS
    }


def _enable_faulthandler() -> None:
    try:
        faulthandler.enable()
    except (RuntimeError, ValueError, OSError):  # no usable sys.stderr (closed by the kernel)
        faulthandler.enable(file=_devnull())


def _behind_faulthandler() -> tuple[dict[int, _Sigaction | None], dict[int, _Sigaction | None]]:
    """Each fatal signal's whole sigaction behind faulthandler (what it chains to) and faulthandler's own
    as it installs them; every handler, faulthandler's included, is then as it was. Call it only with
    faulthandler enabled."""
    front = {sig: _raw(sig) for sig in FATAL_SIGNALS}
    faulthandler.disable()
    behind = {sig: _raw(sig) for sig in FATAL_SIGNALS}
    _enable_faulthandler()
    own = {sig: _raw(sig) for sig in FATAL_SIGNALS}
    _install(front)
    return behind, own


def _address(act: _Sigaction | None) -> int | None:
    return None if act is None else int(act.handler or 0)


def _install(actions: dict[int, _Sigaction | None]) -> None:
    for sig, act in actions.items():
        if act is not None and _LIBC is not None:
            _LIBC.sigaction(int(sig), ctypes.byref(act), None)


def _handlers() -> dict[int, tuple[int | None, Any]]:
    return {sig: (handler_address(sig), signal.getsignal(sig)) for sig in FATAL_SIGNALS}


def _raw(sig: int) -> _Sigaction | None:
    """`sig`'s whole sigaction as the kernel holds it, None where it cannot be read."""
    if _LIBC is None:
        return None
    act = _Sigaction()
    return act if _LIBC.sigaction(int(sig), None, ctypes.byref(act)) == 0 else None


def _devnull() -> Any:
    if not _NULL:
        _NULL.append(open(os.devnull, "w"))  # noqa: SIM115 - kept open for faulthandler, as stderr would be
    return _NULL[0]


_NULL: list[Any] = []


class FatalHandlers:
    """The fatal signals' handlers as they were before the kernel loaded (see the module docstring)."""

    def __init__(self, own_dirs: list[str | os.PathLike[str]] | tuple[str, ...] = ()) -> None:
        self.own_dirs = tuple(os.path.realpath(d) for d in own_dirs if d)
        self.since = time.time()  # before the kernel loads: a file changed after this is its doing
        self.before = snapshot()
        self.faulthandler_on = faulthandler.is_enabled()
        # what reclaim() puts back: the handlers behind faulthandler where it is on (it then chains to them)
        self.base = _behind_faulthandler()[0] if self.faulthandler_on else {s: _raw(s) for s in FATAL_SIGNALS}

    def reclaim(self) -> None:
        """Every fatal signal handled again as before the kernel loaded, whatever it installed since. The
        check above names handlers it can see; a handler chained behind a runtime library's is not one:
        LLVM's (in libtriton, on a GPU) puts back the handler it found and returns, so the fault happens
        again, into the handler behind it. With the fatal signals reclaimed before each of the harness's
        steps, a fault in one ends the worker instead of running the kernel's code. A kernel's honest crash
        reporter only loses its report: nothing honest needs to handle a fault in the harness's work."""
        if _LIBC is None:
            return
        if faulthandler.is_enabled():
            faulthandler.disable()  # it would put back what it found when enabled: maybe the kernel's
        _install(self.base)
        if self.faulthandler_on:
            _enable_faulthandler()  # chains to the handlers it found before the kernel, as it did

    def changed(self) -> list[str]:
        """A finding per fatal signal now handled by the kernel's code. A new handler in an outside
        library (LLVM's, when Triton compiles on a GPU) is taken as the new normal."""
        found = []
        for sig, (address, python) in snapshot().items():
            old_address, old_python = self.before.get(sig, (None, None))
            name = signal.Signals(sig).name
            if python is not old_python and callable(python) and python is not signal.default_int_handler:
                found.append(
                    f"the kernel handles {name} in Python: the harness's own memory accesses or system "
                    "calls would run its code"
                )
                continue
            if address == old_address or address is None or address <= 1:  # unchanged, unread, default
                self.before[sig] = (address, python)
                continue
            why = whose(code_owner(address), self.own_dirs, self.since)
            if why is None:
                self.before[sig] = (address, python)
                continue
            found.append(
                f"the kernel handles {name} itself (its handler is in {why}): the harness's own memory "
                "accesses would run its code (guard pages, traps)"
            )
        return found
