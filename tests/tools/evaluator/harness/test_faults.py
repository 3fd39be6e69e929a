"""The worker's check of the fatal signals' handlers (faults.py): a handler of the kernel's own, in anonymous
memory or a file of its own, is named; one in a library loaded from outside the kernel's directories (the
runtime's: libpython's faulthandler, LLVM's in libtriton) is not."""

from __future__ import annotations

import ctypes
import faulthandler
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.harness.faults import (
    FatalHandlers,
    code_owner,
    handler_address,
    own_directories,
    whose,
)

_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class _Sigaction(ctypes.Structure):
    _fields_ = [("handler", ctypes.c_void_p), ("rest", ctypes.c_char * 256)]


def _set_handler(sig: int, address: int) -> None:
    act = _Sigaction()
    act.handler = address
    ctypes.memmove(ctypes.addressof(act) + 8 + 128, ctypes.byref(ctypes.c_int(4)), 4)  # SA_SIGINFO
    assert ctypes.CDLL(None).sigaction(sig, ctypes.byref(act), None) == 0


@pytest.fixture
def restored() -> Iterator[None]:
    """Every fatal signal's handler (C and Python level) and faulthandler as they were."""
    saved = {}
    for sig in (signal.SIGSEGV, signal.SIGBUS):
        old = _Sigaction()
        assert ctypes.CDLL(None).sigaction(sig, None, ctypes.byref(old)) == 0
        saved[sig] = (old, signal.getsignal(sig))
    was_enabled = faulthandler.is_enabled()
    yield
    faulthandler.disable()
    for sig, (old, python) in saved.items():
        if python is not None:
            signal.signal(sig, python)
        assert ctypes.CDLL(None).sigaction(sig, ctypes.byref(old), None) == 0
    if was_enabled:
        faulthandler.enable()


def test_a_sigsegv_handler_of_the_kernels_own_is_named_and_forgotten_once_restored(restored: None) -> None:
    """redteam9b_segv_guard_pages' handler: a ctypes callback installed with sigaction."""
    faulthandler.disable()
    handlers = FatalHandlers()
    assert handlers.changed() == []
    before = handler_address(signal.SIGSEGV)
    callback = _HANDLER(lambda sig, info, ctx: None)
    _set_handler(signal.SIGSEGV, ctypes.cast(callback, ctypes.c_void_p).value or 0)
    found = handlers.changed()
    assert len(found) == 1 and "handles SIGSEGV itself" in found[0] and "anonymous memory" in found[0]
    assert handlers.changed() == found  # named at every step while it stays
    _set_handler(signal.SIGSEGV, before or 0)
    assert handlers.changed() == []


def test_a_new_handler_in_a_runtime_library_is_no_finding(restored: None) -> None:
    """As LLVM's are when Triton compiles on a GPU: faulthandler's handler lives in libpython (or the
    interpreter's binary), a file outside the kernel's directories."""
    faulthandler.disable()
    _set_handler(signal.SIGSEGV, 0)  # the default, whoever held it before
    handlers = FatalHandlers(own_directories(None))
    faulthandler.enable()
    assert handler_address(signal.SIGSEGV) != handlers.before[signal.SIGSEGV][0]  # it did change
    assert handlers.changed() == []


def test_a_python_level_handler_of_a_fatal_signal_is_named(restored: None) -> None:
    handlers = FatalHandlers()
    signal.signal(signal.SIGBUS, lambda sig, frame: None)
    found = handlers.changed()
    assert found and "handles SIGBUS in Python" in found[0]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("", "anonymous memory"),
        ("[heap]", "anonymous memory"),
        ("/usr/lib/x86_64-linux-gnu/libffi.so.8.1.2", "ctypes or cffi callback"),
        ("/site-packages/_cffi_backend.cpython-312-x86_64-linux-gnu.so", "ctypes or cffi callback"),
        ("/memfd:jit (deleted)", "removed after loading"),
        ("/tmp/scratch/tmp/hook.so (deleted)", "removed after loading"),
        ("/job/kernel/build/hook.so", "the kernel's own hook.so"),
        ("/job/scratch/torch_extensions/ext/ext.so", "the kernel's own ext.so"),
        ("/usr/lib/python3/dist-packages/triton/_C/libtriton.so", None),
        ("/usr/lib/x86_64-linux-gnu/libpython3.12.so.1.0", None),
        ("/job/kernel-other/lib.so", None),  # a sibling directory whose name starts the same is not it
        ("?", None),  # /proc unreadable: nothing is claimed
    ],
)
def test_whose_code_a_handler_is(path: str, expected: str | None) -> None:
    found = whose(path, ("/job/kernel", "/job/scratch/torch_extensions"))
    assert (found is None) if expected is None else (found is not None and expected in found)


def test_the_file_mapped_at_an_address_is_read_from_the_process_map() -> None:
    libc = ctypes.CDLL(None)
    address = ctypes.cast(libc.getpid, ctypes.c_void_p).value or 0
    assert "libc" in os.path.basename(code_owner(address))
    callback = _HANDLER(lambda sig, info, ctx: None)
    owner = code_owner(ctypes.cast(callback, ctypes.c_void_p).value or 0)
    assert owner == "" or "ffi" in os.path.basename(owner)  # anonymous, or libffi's trampolines
    assert code_owner(address, maps="/nonexistent/maps") == "?"


def test_the_kernels_directories_never_include_the_runtimes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel = tmp_path / "kernel"
    kernel.mkdir()
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "scratch" / "torch_extensions"))
    monkeypatch.setenv("HOME", os.path.dirname(sys.prefix))  # a HOME above the interpreter (pyenv, a venv)
    monkeypatch.setenv("TMPDIR", os.sep)
    dirs = own_directories(kernel)
    assert str(kernel.resolve()) in dirs
    assert str((tmp_path / "scratch" / "torch_extensions").resolve()) in dirs
    assert os.path.realpath(os.path.dirname(sys.prefix)) not in dirs and os.sep not in dirs


def test_a_library_written_after_the_kernel_began_is_its_own(tmp_path: Path) -> None:
    """Outside every directory of the kernel's (a worker that is not jailed can write /tmp): its status-
    change time, which no one can set back, says when it was written."""
    since = time.time()
    lib = tmp_path / "hook.so"
    lib.write_bytes(b"\x7fELF")
    assert "written while the kernel ran" in (whose(str(lib), (), since) or "")
    assert whose(str(lib), (), since=time.time() + 60) is None  # a library that was there before
    os.utime(lib, (0, 0))  # an mtime set back: the ctime moves to now
    assert "written while the kernel ran" in (whose(str(lib), (), since) or "")
    assert "gone" in (whose(str(tmp_path / "missing.so"), (), since) or "")


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_a_handler_in_a_shared_object_built_in_tmp_is_named(tmp_path: Path, restored: None) -> None:
    """The route the anonymous-memory rule leaves: the kernel compiles its handler into a library of its
    own outside its directories, loads it and installs the library's function."""
    handlers = FatalHandlers(own_directories(None))
    source = tmp_path / "hook.c"
    source.write_text("void on_fault(int sig, void *info, void *ctx) { (void)sig; (void)info; (void)ctx; }\n")
    lib = tmp_path / "hook.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(source)], check=True)
    loaded = ctypes.CDLL(str(lib))
    _set_handler(signal.SIGBUS, ctypes.cast(loaded.on_fault, ctypes.c_void_p).value or 0)
    found = handlers.changed()
    assert len(found) == 1 and "handles SIGBUS itself" in found[0] and "hook.so" in found[0], found


def test_a_handler_of_the_kernels_hidden_behind_faulthandler_is_named(restored: None) -> None:
    """Red team round 10: the kernel's handler first, then `faulthandler.enable()`: sigaction() reports
    faulthandler's (libpython), which on a fault restores ours and raises again. The look goes behind it."""
    faulthandler.disable()
    _set_handler(signal.SIGSEGV, 0)
    handlers = FatalHandlers(own_directories(None))
    callback = _HANDLER(lambda sig, info, ctx: None)
    _set_handler(signal.SIGSEGV, ctypes.cast(callback, ctypes.c_void_p).value or 0)
    with open(os.devnull, "w") as null:
        faulthandler.enable(file=null)
        in_front = handler_address(signal.SIGSEGV)
        assert "libpython" in code_owner(in_front or 0) or "python" in code_owner(in_front or 0)
        found = handlers.changed()
        assert found and "handles SIGSEGV itself" in found[0] and "anonymous memory" in found[0]
        assert faulthandler.is_enabled() and handler_address(signal.SIGSEGV) == in_front  # as it was


# -- reclaim: the harness's steps run with the fatal signals handled as before the kernel loaded ----------


def test_reclaim_puts_back_the_handlers_from_before_the_kernel(restored: None) -> None:
    faulthandler.disable()
    _set_handler(signal.SIGSEGV, 0)
    handlers = FatalHandlers(own_directories(None))
    callback = _HANDLER(lambda sig, info, ctx: None)
    _set_handler(signal.SIGSEGV, ctypes.cast(callback, ctypes.c_void_p).value or 0)
    _set_handler(signal.SIGBUS, ctypes.cast(callback, ctypes.c_void_p).value or 0)
    handlers.reclaim()
    assert handler_address(signal.SIGSEGV) == 0
    assert handler_address(signal.SIGBUS) == handlers.before[signal.SIGBUS][0]


def test_reclaim_leaves_faulthandler_chaining_to_what_it_chained_to_before_the_kernel(restored: None) -> None:
    """Red team round 10's front: the kernel's handler, then faulthandler re-enabled over it. Reclaimed,
    faulthandler is in front as it was before the kernel, and behind it is the default again."""
    faulthandler.disable()
    _set_handler(signal.SIGSEGV, 0)
    with open(os.devnull, "w") as null:
        faulthandler.enable(file=null)
        handlers = FatalHandlers(own_directories(None))
        in_front = handler_address(signal.SIGSEGV)
        callback = _HANDLER(lambda sig, info, ctx: None)
        faulthandler.disable()
        _set_handler(signal.SIGSEGV, ctypes.cast(callback, ctypes.c_void_p).value or 0)
        faulthandler.enable(file=null)
        handlers.reclaim()
        assert faulthandler.is_enabled() and handler_address(signal.SIGSEGV) == in_front
        faulthandler.disable()  # what faulthandler would put back on a fault: the default, not the kernel's
        assert handler_address(signal.SIGSEGV) == 0


# A runtime library's handler as LLVM's is (libtriton, when Triton compiles on a GPU): on a fault it puts back
# the handler it found when it registered and returns, so the fault repeats into that handler.
CHAINING_LIBRARY = r"""
#include <signal.h>
#include <string.h>
static struct sigaction found;
static void on_fault(int sig, siginfo_t *info, void *ctx) {
    (void)info; (void)ctx;
    sigaction(sig, &found, NULL);
}
void register_handlers(void) {
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_sigaction = on_fault;
    act.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &act, &found);
}
"""

# The guard-page route (red team round 9b) with the kernel's handler behind the runtime library's: the
# harness's write into the kernel's read-only buffer faults into the kernel's code, which opens the page.
GUARD_PAGE_BEHIND_A_RUNTIME = r"""
import ctypes, mmap, signal, sys
from aka_graph.tools.evaluator.harness.faults import FatalHandlers, own_directories

libc = ctypes.CDLL(None, use_errno=True)
runtime = ctypes.CDLL(sys.argv[1])  # the runtime's library, there before the kernel
handlers = FatalHandlers(own_directories(None))  # the worker's record, before the kernel loads
page = mmap.mmap(-1, 4096)
address = ctypes.addressof(ctypes.c_char.from_buffer(page))
ran = []

def kernels_handler(sig, info, ctx):
    ran.append(sig)
    libc.mprotect(ctypes.c_void_p(address), 4096, 3)  # the guard page opens: the harness's write goes on

class Sigaction(ctypes.Structure):
    _fields_ = [("handler", ctypes.c_void_p), ("rest", ctypes.c_char * 256)]

callback = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(kernels_handler)
act = Sigaction()
act.handler = ctypes.cast(callback, ctypes.c_void_p).value
flags = ctypes.c_int(4 | 0x40000000)  # SA_SIGINFO | SA_NODEFER
ctypes.memmove(ctypes.addressof(act) + 8 + 128, ctypes.byref(flags), 4)
assert libc.sigaction(signal.SIGSEGV, ctypes.byref(act), None) == 0
runtime.register_handlers()  # Triton's first compile: LLVM registers in front of the kernel's handler
assert libc.mprotect(ctypes.c_void_p(address), 4096, 0) == 0  # the kernel's buffer made a guard page
print("named:", handlers.changed(), flush=True)
if sys.argv[2] == "reclaim":
    handlers.reclaim()
ctypes.memset(address, 1, 16)  # the harness writes fresh inputs into the kernel's buffer
print("the kernel's handler ran:", ran, flush=True)
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
@pytest.mark.parametrize("reclaim", [False, True], ids=["not-reclaimed", "reclaimed"])
def test_a_handler_chained_behind_a_runtime_librarys_never_runs_in_a_reclaimed_step(
    tmp_path: Path, reclaim: bool
) -> None:
    """No check names the kernel's handler here: sigaction() shows the runtime library's, a file that was
    there before the kernel. Unreclaimed, the harness's write runs the kernel's code; reclaimed, the fault
    ends the process (the parent then reports the worker's death) and the kernel's code never runs."""
    source = tmp_path / "runtime.c"
    source.write_text(CHAINING_LIBRARY)
    lib = tmp_path / "libruntime.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(source)], check=True)
    time.sleep(0.05)  # the library's ctime strictly before the worker's record
    env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "PYTHONFAULTHANDLER")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[4])
    proc = subprocess.run(
        [sys.executable, "-c", GUARD_PAGE_BEHIND_A_RUNTIME, str(lib), "reclaim" if reclaim else "keep"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert "named: []" in proc.stdout, (proc.stdout, proc.stderr[-2000:])
    if reclaim:
        assert proc.returncode == -signal.SIGSEGV, (proc.returncode, proc.stdout, proc.stderr[-2000:])
        assert "the kernel's handler ran" not in proc.stdout
    else:
        assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-2000:])
        assert "the kernel's handler ran: [11]" in proc.stdout
