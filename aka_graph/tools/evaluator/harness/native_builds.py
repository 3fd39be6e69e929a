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
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .policy import flag_problems, included_problems, kernel_files, native_source_problems

MODULE = "torch.utils.cpp_extension"
ENTRY_POINTS = ("load_inline", "load")
REFUSED: list[str] = []  # what a refused build held (guards.Sentinel reports it)
_WRAPPERS: dict[str, Callable[..., Any]] = {}  # entry point -> the wrapper installed (guards._watched)


class NativeBuildRefused(RuntimeError):
    """Raised in the kernel's call instead of building what the scan refused."""


def _texts(value: Any) -> list[str]:
    """A sources argument: one string, or strings in a list (None: nothing)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, Iterable) else []


def _binding_calls(functions: Any) -> str:
    """What load_inline's generated bindings reference, as calls the door scan reads: a `functions` entry
    names a C++ function it binds for Python (`["system"]` hands libc's system to the kernel)."""
    names = list(functions) if isinstance(functions, dict | list | tuple) else _texts(functions)
    return "\n".join(f"void bound() {{ {name}(0); }}" for name in names if isinstance(name, str))


def build_problems(entry: str, arguments: dict[str, Any]) -> list[str]:
    """What the scan refuses in one call of `entry` (load_inline or load) with these bound arguments."""
    found: list[str] = []
    texts: list[tuple[str, str]] = []
    if entry == "load_inline":
        for key in ("cpp_sources", "cuda_sources", "sycl_sources"):
            texts += [(key, t) for t in _texts(arguments.get(key))]
        texts.append(("functions", _binding_calls(arguments.get("functions"))))
    else:
        for source in _texts(arguments.get("sources")):
            path = Path(source)
            body = path.read_text(errors="replace") if path.is_file() else ""
            texts.append((source, body))
            found += included_problems(path, body, path.parent)
    for where, text in texts:
        found += [f"{where}: {what}" for what in native_source_problems(text, always=True)]
    for key in ("extra_cflags", "extra_cuda_cflags", "extra_sycl_cflags", "extra_ldflags"):
        for flag in _texts(arguments.get(key)):
            found += [f"{key}: {what}" for what in flag_problems(flag)]
    return found


def _guarded(entry: str, build: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(build)

    def guarded_build(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return build(*args, **kwargs)  # torch raises its own error for the call as written
        found = build_problems(entry, dict(bound.arguments))
        if found:
            REFUSED.extend(found)
            raise NativeBuildRefused(
                f"{MODULE}.{entry} refused: the C++ built at run time {found[0]}"
                + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")
            )
        return build(*args, **kwargs)

    guarded_build.__name__ = guarded_build.__qualname__ = entry
    guarded_build.__doc__ = build.__doc__
    return guarded_build


def names_the_module(kernel_dir: Path) -> bool:
    """Whether any file of the kernel's mentions cpp_extension (the only way the policy leaves to it)."""
    for path in kernel_files(kernel_dir):
        try:
            if "cpp_extension" in path.read_text(errors="replace"):
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
