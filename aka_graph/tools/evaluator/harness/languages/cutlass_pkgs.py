"""Where CUTLASS is on a GPU host: its C++ headers (the `cutlass` language) and the CuTe DSL's Python
packages (the `cute_dsl` language).

Why a search of its own: CUTLASS arrives in several shapes, and a job's environment is not the shell's.
The headers may be a checkout ($CUTLASS_DIR as SOL-ExecBench reads it, $CUTLASS_PATH, $CUTLASS_HOME,
/usr/local/cutlass), or the `nvidia-cutlass` wheel (`cutlass_library/source/include`) installed where the
job's Python finds it, including a directory only the job's PYTHONPATH names (a kit installed with
`pip --target`). The DSL wheel (`nvidia-cutlass-dsl`) puts its `cutlass` package in a subdirectory that
a `.pth` file adds to sys.path, and `.pth` files are read in site-packages only: installed with
`pip --target`, `import cutlass.cute` fails until that subdirectory is on the path, which
`activate_cute_dsl` does. Nothing found is the host's fault: `MissingToolchain` naming every place looked
at and what to install. Standard library only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from .errors import MissingToolchain

CUTLASS_ENV = ("CUTLASS_DIR", "CUTLASS_PATH", "CUTLASS_HOME")
CUTLASS_DIRS = ("/usr/local/cutlass", "/opt/cutlass")
# Python package -> its subdirectories that may be a CUTLASS root (holding include/cutlass/cutlass.h).
# nvidia-cutlass ships the headers in cutlass_library/source; the DSL wheels (4.3 to 4.8 seen) ship none
# today, but a root inside them is taken if a later one does.
HEADER_PACKAGES: dict[str, tuple[str, ...]] = {
    "cutlass_library": ("source",),
    "nvidia_cutlass_dsl": ("", "source"),
}
# Where nvidia-cutlass-dsl keeps the `cutlass` Python package (4.3: python_packages; 4.4+: dsl_packages).
DSL_PACKAGE_DIRS = ("dsl_packages", "python_packages")
CUTLASS_INSTALL_HINT = (
    "pip install nvidia-cutlass (its headers are cutlass_library/source/include) into the job's Python, "
    "or set CUTLASS_DIR to a CUTLASS checkout the job can see (e.g. /usr/local/cutlass)"
)


def python_search_path(env: Mapping[str, str], base: Iterable[str] | None = None) -> list[str]:
    """The directories a job's Python imports from: its PYTHONPATH (relative entries against the current
    directory, as Python does), then `base` (default: this interpreter's sys.path). No duplicates."""
    entries = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    entries += list(sys.path if base is None else base)
    seen: list[str] = []
    for entry in entries:
        path = os.path.abspath(entry or ".")
        if path not in seen:
            seen.append(path)
    return seen


def _include_dirs(root: Path) -> list[str] | None:
    """CUTLASS's include dirs under `root`: a checkout (root/include/cutlass/cutlass.h, plus
    tools/util/include when present) or an include directory itself (root/cutlass/cutlass.h)."""
    for inc, top in ((root / "include", root), (root, root.parent)):
        if (inc / "cutlass" / "cutlass.h").is_file():
            dirs = [str(inc)]
            util = top / "tools" / "util" / "include"
            if util.is_dir():
                dirs.append(str(util))
            return dirs
    return None


def header_roots(
    env: Mapping[str, str],
    system_roots: Iterable[str] = CUTLASS_DIRS,
    search_path: Iterable[str] | None = None,
) -> list[tuple[str, Path]]:
    """Every place CUTLASS's headers may be, in the order they are taken: (where it came from, root)."""
    roots = [(f"${var}", Path(env[var])) for var in CUTLASS_ENV if env.get(var)]
    for entry in python_search_path(env, search_path):
        for package, subdirs in HEADER_PACKAGES.items():
            pkg = Path(entry) / package
            if pkg.is_dir():
                roots += [(f"the {package} package", pkg / sub) for sub in subdirs]
    roots += [(root, Path(root)) for root in system_roots]
    return roots


def cutlass_include_dirs(
    env: Mapping[str, str],
    extra_roots: Iterable[str] = CUTLASS_DIRS,
    search_path: Iterable[str] | None = None,
) -> list[str]:
    """CUTLASS's `include` (and `tools/util/include`) for a build in the environment `env`; the first
    root that holds cutlass/cutlass.h wins (environment, then Python packages, then system dirs)."""
    system_roots = tuple(extra_roots)
    for _, root in header_roots(env, system_roots, search_path):
        dirs = _include_dirs(root)
        if dirs:
            return dirs
    looked = [f"${v}" + (f"={env[v]}" if env.get(v) else " (unset)") for v in CUTLASS_ENV]
    looked.append("the cutlass_library / nvidia_cutlass_dsl packages on the job's Python path")
    looked += list(system_roots)
    raise MissingToolchain(
        "the candidate uses CUTLASS but its headers (cutlass/cutlass.h) were not found; looked at "
        f"{', '.join(looked)}: {CUTLASS_INSTALL_HINT}"
    )


def dsl_package_dirs(search_path: Iterable[str]) -> list[str]:
    """The directories of an installed nvidia-cutlass-dsl that hold its `cutlass` package."""
    found = []
    for entry in search_path:
        pkg = Path(entry) / "nvidia_cutlass_dsl"
        for sub in DSL_PACKAGE_DIRS:
            if (pkg / sub / "cutlass" / "__init__.py").is_file():
                found.append(str(pkg / sub))
    return found


def activate_cute_dsl(env: Mapping[str, str] | None = None) -> list[str]:
    """Put an nvidia-cutlass-dsl installed where its .pth is not read (pip --target, PYTHONPATH) on
    sys.path, as that .pth would; returns what was added (nothing when `cutlass` already imports or
    no such install exists)."""
    added = []
    for path in dsl_package_dirs(python_search_path(env if env is not None else os.environ)):
        if path not in sys.path:
            sys.path.append(path)
            added.append(path)
    return added


CUTE_DSL_HINT = (
    "pip install nvidia-cutlass-dsl (on CUDA 13 hosts: pip install 'nvidia-cutlass-dsl[cu13]'; 4.4 and later "
    "are about 100 MB of wheels, nvidia-cutlass-dsl-libs-base/-core/-cu13; 4.3.5 is one 59 MB wheel)"
)
