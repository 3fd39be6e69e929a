"""The C++ a kernel compiles at run time is read at the moment it is compiled.

The source policy reads the literals it can see; C++ a kernel assembles at run time (`"sys" + "tem("`, a
template filled by `str.format`) reaches `torch.utils.cpp_extension.load_inline` unread (red team round
15, D2). The policy leaves a kernel no other way to the compiler (no file writes, no private names of
cpp_extension or torch._inductor, no importlib), so the worker wraps cpp_extension's two entry points
before the kernel is imported, in kernels whose files name the module at all (importing it costs ~0.5 s),
and scans what each call would build: every source text, the bindings load_inline writes for
`functions` (a binding of `system` or `PyRun_String` is a call of it), the files `load` is given and what
they include, and every compiler flag. A refused build raises in the kernel and stays recorded
(`REFUSED`), so the worker's checks report it whatever the kernel catches.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import sysconfig
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .policy import flag_problems, kernel_files, native_source_problems

MODULE = "torch.utils.cpp_extension"
ENTRY_POINTS = ("load_inline", "load")
REFUSED: list[str] = []  # what a refused build held (guards.Sentinel reports it)
_WRAPPERS: dict[str, Callable[..., Any]] = {}  # entry point -> the wrapper installed (guards._watched)


class NativeBuildRefused(RuntimeError):
    """Raised in the kernel's call instead of building what the scan refused."""


class UnreadableArgument(TypeError):
    """An argument of a type whose contents the scan cannot be sure are what the build will read."""


def _text(value: Any) -> str:
    """A string exactly as the build reads it: a str subclass may answer a scan differently."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise UnreadableArgument(f"{type(value).__name__} where a string or a path is expected")
    return str.__str__(value)


def plain(key: str, value: Any) -> Any:
    """An argument as plain data, the one copy both the scan and the build get (red team round 15: a list
    or dict subclass iterated one way for the scan and another for the build, a generator read twice).
    Sources, flags and paths: a string, or a list of them; `functions`: names, or a dict name -> doc."""
    if value is None or key not in SCANNED:
        return value
    if key == "functions" and isinstance(value, dict):
        return {_text(k): _text(v) for k, v in dict.items(value)}
    if isinstance(value, str | os.PathLike):
        return _text(value)
    if isinstance(value, list | tuple):
        return [
            _text(v) for v in (list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value))
        ]
    raise UnreadableArgument(f"{key}: {type(value).__name__} (give a string, a list of strings or a dict)")


SCANNED = (
    "cpp_sources",
    "cuda_sources",
    "sycl_sources",
    "sources",
    "functions",
    "extra_cflags",
    "extra_cuda_cflags",
    "extra_sycl_cflags",
    "extra_ldflags",
    "extra_include_paths",
)


def _texts(value: Any) -> list[str]:
    """A plain argument (`plain`) as its strings: one string, or the strings of a list (None: nothing)."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _binding_calls(functions: Any) -> tuple[str, list[str]]:
    """What load_inline's generated bindings reference, as calls the door scan reads (a `functions` entry
    binds that C++ function for Python: `["system"]` hands libc's system to the kernel), and what cannot be
    pasted into its binding code as it is: a name that is no identifier, a docstring with a quote, a
    backslash or a line break (`'"); m.def("shell", &system, "'`, red team round 15)."""
    docs = functions if isinstance(functions, dict) else {name: "" for name in _texts(functions)}
    problems = [f"functions: {name!r} is no C++ identifier" for name in docs if not name.isidentifier()]
    problems += [
        f"functions: the docstring of {name!r} holds a quote, a backslash or a line break"
        for name, doc in docs.items()
        if any(c in doc for c in '"\\\n\r')
    ]
    return "\n".join(f"void bound() {{ {name}(0); }}" for name in docs), problems


_INCLUDE = re.compile(r'^\s*(?:#|%:)\s*include\s*["<]([^">\n]+)[">]', re.MULTILINE)
_DIR_FLAG = re.compile(r"^\s*-(?:I|iquote|isystem|idirafter)\s*(\S+)")


def _search_dirs(arguments: dict[str, Any]) -> list[Path]:
    """Where the compiler looks for an #include: the build directory, extra_include_paths, -I-like flags."""
    dirs = [Path(d) for d in _texts(arguments.get("extra_include_paths"))]
    if isinstance(arguments.get("build_directory"), str):
        dirs.append(Path(arguments["build_directory"]))
    for key in ("extra_cflags", "extra_cuda_cflags", "extra_sycl_cflags"):
        dirs += [Path(m.group(1)) for flag in _texts(arguments.get(key)) if (m := _DIR_FLAG.match(flag))]
    return dirs


def _installed(path: Path) -> bool:
    """A file of the installed system or Python (the compiler's, CUDA's, torch's, CUTLASS's headers),
    whose texts no kernel wrote: not followed (CUDA's own headers name cudaLaunchHostFunc)."""
    roots = {"/usr/", "/opt/", sys.prefix, sys.base_prefix, sysconfig.get_paths()["purelib"]}
    text = str(path)
    return any(text.startswith(root.rstrip("/") + "/") for root in roots if root)


def _included(text: str, here: Path | None, dirs: list[Path], seen: set[Path]) -> list[tuple[str, str]]:
    """(path, text) of every file `text` includes, quoted or angled, through `here` (the including
    file's directory) and `dirs`, and theirs in turn, whatever their suffix; installed files left out."""
    found: list[tuple[str, str]] = []
    for name in _INCLUDE.findall(text):
        for base in ([here] if here is not None else []) + dirs:
            target = (base / name).resolve()
            if target in seen or not target.is_file() or _installed(target):
                continue
            seen.add(target)
            body = target.read_text(errors="replace")
            found.append((str(target), body))
            found += _included(body, target.parent, dirs, seen)
            break
    return found


def build_problems(entry: str, arguments: dict[str, Any]) -> list[str]:
    """What the scan refuses in one call of `entry` (load_inline or load) with these bound arguments, its
    sources and every file they include (red team round 15b: `#include "door.txt"` through
    extra_include_paths) read whatever their suffix."""
    found: list[str] = []
    texts: list[tuple[str, str]] = []
    dirs, seen = _search_dirs(arguments), set()
    if entry == "load_inline":
        for key in ("cpp_sources", "cuda_sources", "sycl_sources"):
            for text in _texts(arguments.get(key)):
                texts += [(key, text), *_included(text, None, dirs, seen)]
        calls, pasted = _binding_calls(arguments.get("functions"))
        texts.append(("functions", calls))
        found += pasted
    else:
        for source in _texts(arguments.get("sources")):
            path = Path(source)
            body = path.read_text(errors="replace") if path.is_file() else ""
            texts += [(str(source), body), *_included(body, path.resolve().parent, dirs, seen)]
    for where, text in texts:
        found += [f"{where}: {what}" for what in native_source_problems(text, always=True)]
    for key in ("extra_cflags", "extra_cuda_cflags", "extra_sycl_cflags", "extra_ldflags"):
        for flag in _texts(arguments.get(key)):
            found += [f"{key}: {what}" for what in flag_problems(flag, as_flag=True)]
    return found


def _guarded(entry: str, build: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(build)

    def guarded_build(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return build(*args, **kwargs)  # torch raises its own error for the call as written
        try:
            for key, value in list(bound.arguments.items()):
                bound.arguments[key] = plain(key, value)  # what is scanned is what is built
            found = build_problems(entry, dict(bound.arguments))
        except UnreadableArgument as exc:
            found = [f"an argument the scan cannot read: {exc}"]
        if found:
            REFUSED.extend(found)
            raise NativeBuildRefused(
                f"{MODULE}.{entry} refused: the C++ built at run time {found[0]}"
                + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")
            )
        return build(*bound.args, **bound.kwargs)

    guarded_build.__name__ = guarded_build.__qualname__ = entry
    guarded_build.__doc__ = build.__doc__
    return guarded_build


def names_the_module(kernel_dir: Path) -> bool:
    """Whether any file of the kernel's mentions cpp_extension (the only way the policy leaves to it), as
    Python reads identifiers: NFKC-folded (`cpp_\uff45xtension` is the module, red team round 15)."""
    for path in kernel_files(kernel_dir):
        try:
            if "cpp_extension" in unicodedata.normalize("NFKC", path.read_text(errors="replace")):
                return True
        except OSError:
            continue
    return False


def guard(kernel_dir: Path | str | None) -> bool:
    """Wrap cpp_extension's entry points before the kernel is imported (before the Sentinel's snapshot,
    which then watches the wrappers): only for a kernel that names the module. True when wrapped."""
    if kernel_dir is None or not names_the_module(Path(kernel_dir)):
        return False
    import torch.utils.cpp_extension  # noqa: F401  (bound to sys.modules below)

    module = sys.modules[MODULE]
    for entry in ENTRY_POINTS:
        if entry not in _WRAPPERS:
            _WRAPPERS[entry] = _guarded(entry, getattr(module, entry))
        setattr(module, entry, _WRAPPERS[entry])
    return True


def watched() -> list[tuple[str, Any, str]]:
    """(name, owner, attribute) of each wrapper installed, for guards._watched: a kernel that put the
    original back is reported as a replaced function."""
    module = sys.modules.get(MODULE)
    return [(f"{MODULE}.{entry}", module, entry) for entry in _WRAPPERS] if module is not None else []
