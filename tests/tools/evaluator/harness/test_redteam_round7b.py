"""Red team, round 7b: cheats that get through because of round 7's relaxations of the source policy
(scopes.py, read-only open, own-field reads, getattr by a constant) and the kernel directory's handling
(candidates/redteam7b_*).

Each test asserts what the harness does about it since the fixes of the same session (scopes.py: module-
and class-level bindings count only when unconditional, earlier and never deleted; own-field reads only
for plain classes and never for banned module names; star imports banned; every binding form counted
for getattr's constants; read-only open with no argument after the mode and a known owner; symlinked
directories scanned as the worker's copy holds them; #included files scanned).

End to end (rmsnorm, batch 170 on CPU: honest torch ~800 us; each cheat PASSed at ~50 us, outputs right):
- redteam7b_dead_binding_exec: `if False: exec = None` makes every later `exec` "a binding of the file's
  own" (scopes.binds counts any Store or Del in the module body, executed or not); at run time the global
  was never set and the name falls through to the builtin. exec runs redteam7_sourceless_pyc's fastpath
  (frames, a shadowed Bench.perturb, burst calls skipped) from a string constant nothing parses.
- redteam7b_field_builtins: `cfg = Settings()` with Settings declaring a field `builtins` and a `__new__`
  that returns the torch module: policy.own_field_reads exempts `cfg.builtins` (torch's `import builtins`),
  and `.exec` is no banned attribute.
- redteam7b_symlinked_helpers: `helpers -> ../outside`: scan_kernel_dir's rglob does not enter a symlinked
  directory; read_only_copy's copytree(symlinks=False) copies its files for the worker.

Static bypasses (scan_source returns [] for code that reaches a banned thing; each snippet is also run
here to show it reaches it): see STATIC_BYPASSES.

The candidates keep their kernel as `cheat_kernel.py` (copied to kernel.py by these tests): a kernel.py
in a `redteam7b_*` directory would fail test_adversarial's "every candidate is classified" test, whose
prefix list (not to be edited here) does not know the round.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aka_graph.tools.evaluator.evaluation_result import EvaluationResult
from aka_graph.tools.evaluator.harness.policy import scan_kernel_dir, scan_source
from aka_graph.tools.evaluator.harness.worker_proc import read_only_copy, remove_tree
from tests.tools.evaluator.harness.test_adversarial import (
    CANDIDATES,
    HARNESS_DIR,
    REJECTED,
    SOL_FIXTURES,
    describe,
    run_harness,
)

RMSNORM = SOL_FIXTURES / "rmsnorm"
BATCH_170 = ["b010c7f2-801d-41c0-b5d0-be619ecb4090"]  # honest torch ~800 us on CPU
FASTPATH = CANDIDATES / "redteam7_sourceless_pyc" / "fastpath_source.txt"


def _kernel_dir(tmp_path: Path, candidate: str) -> Path:
    """The candidate as it is shipped: its cheat_kernel.py as kernel.py."""
    kernel = tmp_path / "shipped" / candidate
    kernel.mkdir(parents=True)
    shutil.copy(CANDIDATES / candidate / "cheat_kernel.py", kernel / "kernel.py")
    return kernel


def _passes_with_a_fake_latency(result: dict[str, Any]) -> bool:
    return result["status"] == "PASS" and any((w["latency_us"] or 1e9) < 300 for w in result["workloads"])


# -- end to end ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_dead_module_level_binding_does_not_make_exec_the_files_own(tmp_path: Path) -> None:
    result = run_harness(tmp_path, RMSNORM, _kernel_dir(tmp_path, "redteam7b_dead_binding_exec"), BATCH_170)
    assert result["status"] in REJECTED, describe(result)


@pytest.mark.slow
def test_a_field_named_builtins_is_not_a_door_to_the_builtins(tmp_path: Path) -> None:
    result = run_harness(tmp_path, RMSNORM, _kernel_dir(tmp_path, "redteam7b_field_builtins"), BATCH_170)
    assert result["status"] in REJECTED, describe(result)


def _symlinked_kernel(root: Path) -> Path:
    """kernel/kernel.py importing helpers.fast, kernel/helpers -> ../outside, outside/fast.py the payload."""
    (root / "outside").mkdir(parents=True)
    shutil.copy(FASTPATH, root / "outside" / "fast.py")
    (root / "outside" / "__init__.py").write_text("")
    kernel = root / "kernel"
    kernel.mkdir()
    shutil.copy(CANDIDATES / "redteam7b_symlinked_helpers" / "cheat_kernel.py", kernel / "kernel.py")
    (kernel / "helpers").symlink_to(Path("..") / "outside", target_is_directory=True)
    return kernel


def test_the_workers_copy_holds_the_files_behind_a_symlinked_directory(tmp_path: Path) -> None:
    """Not a check of the harness: read_only_copy follows the link (the worker can import helpers.fast)."""
    kernel = _symlinked_kernel(tmp_path)
    copy = read_only_copy(kernel, tmp_path / "copy")
    try:
        assert (copy / "helpers" / "fast.py").is_file()
    finally:
        remove_tree(copy)


def test_the_policy_reads_the_files_behind_a_symlinked_directory(tmp_path: Path) -> None:
    found = scan_kernel_dir(_symlinked_kernel(tmp_path))
    assert any("fast.py" in f for f in found), found


@pytest.mark.slow
def test_code_in_a_symlinked_directory_never_runs_unscanned(tmp_path: Path) -> None:
    """run_harness flattens symlinks when it copies the kernel into the job; a job here keeps them, as a
    kernel directory in an agent's workspace does."""
    job = tmp_path / "job"
    shutil.copytree(HARNESS_DIR, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(RMSNORM, job / "op")
    _symlinked_kernel(job)
    (job / "tmp").mkdir()
    argv = [sys.executable, "-m", "harness", "evaluate", "--op-dir", "op", "--kernel-dir", "kernel",
            "--out", "result.json", "--seeds", "3", "--device", "cpu", "--shape-id", BATCH_170[0]]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(job), "TMPDIR": str(job / "tmp"),
           "PYTHONPATH": ".", "TRITON_INTERPRET": "1"}
    proc = subprocess.run(argv, cwd=job, env=env, capture_output=True, text=True, timeout=240)
    out = job / "result.json"
    assert out.is_file(), proc.stderr[-3000:]
    result = json.loads(out.read_text())
    EvaluationResult.model_validate(result)
    assert not _passes_with_a_fake_latency(result), describe(result)


# -- static bypasses ----------------------------------------------------------------------------------------

STATIC_BYPASSES = {
    # 1. scopes.refers_to_own_binding: a binding that never runs at module or class level (LOAD_NAME and
    # LOAD_GLOBAL fall through to the builtins when the name was never set, or was deleted)
    "exec after a dead `if False:` binding": "if False:\n    exec = None\nexec('import gc as REACHED')\n",
    "compile after an assignment and a del": (
        "compile = None\ndel compile\nREACHED = compile('1', 'f', 'eval')\n"
    ),
    "eval after an except-as binding (deleted when the handler ends)": (
        "try:\n    pass\nexcept Exception as eval:\n    pass\nREACHED = eval('len')\n"
    ),
    "open for update after a loop over nothing": (
        "for open in ():\n    pass\nREACHED = open(PATH, 'r+b')\n"
    ),
    "globals after a def that never runs": (
        "while False:\n    def globals():\n        pass\nREACHED = globals()\n"
    ),
    "__import__ in a class body after a dead binding": (
        "class K:\n    if False:\n        __import__ = None\n    mod = __import__('gc')\nREACHED = K.mod\n"
    ),
    # star imports: every banned attribute of os / io as a bare name (alias checks look at alias.name '*')
    "os's process and fd functions by a star import": (
        "from os import *\nREACHED = (system, kill, getppid, pwrite, fork, execv, dup2, fdopen)\n"
    ),
    "io.FileIO by a star import": "from io import *\nREACHED = FileIO\n",
    # 4. own_field_reads: `Cls(...)` need not make a Cls
    "builtins as a field of an instance whose __new__ returns torch": (
        "import torch\nclass Settings:\n    builtins = None\n    def __new__(cls):\n"
        "        return torch.nn.functional.torch\ncfg = Settings()\nREACHED = cfg.builtins.exec\n"
    ),
    # 5. module_string_constants counts Name stores only: a match capture (or an import, an except-as)
    # rebinds the "constant"
    "getattr by a constant a match capture rebinds": (
        "N = 'relu'\nmatch '__glo' + 'bals__':\n    case N:\n        pass\n"
        "def f():\n    pass\nREACHED = getattr(f, N)\n"
    ),
    # 2. read_only_open: positional arguments after the mode are not looked at (opener is the 8th)
    "a read-only open whose positional opener truncates (writes) the file": (
        "import os\ntry:\n    open(PATH, 'r', -1, None, None, None, True, os.truncate)\n"
        "except TypeError:\n    pass\nREACHED = os.path.getsize(PATH)\n"
    ),
    # X.open(...): the mode is taken at position 0 for any owner but io/codecs/os; for tarfile, gzip,
    # bz2, lzma, dbm, zipfile the 0th argument is the file name, the mode (unchecked) the next
    "tarfile.open for writing with a file named 'rb'": (
        "import tarfile\nwith tarfile.open('rb', 'w') as t:\n    pass\nREACHED = tarfile.is_tarfile('rb')\n"
    ),
}


@pytest.mark.parametrize("source", list(STATIC_BYPASSES.values()), ids=list(STATIC_BYPASSES))
def test_the_policy_flags_code_that_reaches_a_banned_thing(source: str) -> None:
    assert scan_source(source, "kernel.py"), "scans clean"


def _reached(source: str, where: Path) -> Any:
    victim = where / "victim"
    victim.write_bytes(b"x")
    namespace: dict[str, Any] = {"PATH": str(victim), "__name__": "snippet"}
    cwd = os.getcwd()
    os.chdir(where)
    try:
        exec(compile(source, "snippet.py", "exec"), namespace)
    finally:
        os.chdir(cwd)
    reached = namespace.get("REACHED", namespace.get("K"))
    if isinstance(reached, io.IOBase):  # a file object: whether it can write, then closed
        writable = reached.writable()
        reached.close()
        return writable
    return reached


@pytest.mark.parametrize("source", list(STATIC_BYPASSES.values()), ids=list(STATIC_BYPASSES))
def test_each_static_bypass_reaches_what_the_policy_bans(source: str, tmp_path: Path) -> None:
    """Not a check of the harness: evidence that each snippet above is the banned thing at run time."""
    reached = _reached(source, tmp_path)
    if "import gc as REACHED" in source or "__import__('gc')" in source:
        assert reached.__name__ == "gc"
    elif "compile(" in source:
        assert type(reached).__name__ == "code"
    elif "eval('len')" in source:
        assert reached is len
    elif "r+b" in source:
        assert reached is True  # opened for writing
    elif "globals()" in source:
        assert isinstance(reached, dict) and "__builtins__" in reached
    elif "from os import" in source:
        assert reached[0] is os.system and reached[1] is os.kill
    elif "from io import" in source:
        assert reached is io.FileIO
    elif "builtins = None" in source:
        assert reached is builtins.exec
    elif "match" in source:
        assert isinstance(reached, dict) and "__builtins__" in reached
    elif "os.truncate" in source:
        assert reached > 1  # the "read-only" open grew the file from 1 byte
    elif "tarfile" in source:
        assert reached is True  # a tar archive written by a "read-only" open
    else:
        raise AssertionError(f"no evidence check for {source!r}")


def test_a_native_source_includes_only_what_the_policy_read(tmp_path: Path) -> None:
    """native_source_problems reads NATIVE_SUFFIXES only; `#include "door.inc"` pulls in a file of any
    other name, which read_only_copy (and the C++ build's source directory) keeps."""
    kernel = tmp_path / "kernel"
    kernel.mkdir()
    (kernel / "kernel.cpp").write_text(
        '#include <torch/extension.h>\n#include "door.inc"\nint run() { return door(); }\n'
    )
    (kernel / "door.inc").write_text('int door() { return PyRun_SimpleString("import gc"); }\n')
    assert scan_kernel_dir(kernel), "scans clean"
