"""Finding what a candidate's language needs on the GPU host, or saying exactly what to install.

Anything missing here is the host's fault, never the candidate's: it becomes `INFRA_ERROR` with the
package or tool to install (`MissingToolchain`). Every lookup takes its inputs explicitly (environment,
search paths) so the tests can point it at an empty host. Standard library only at import time.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .cutlass_pkgs import CUTE_DSL_HINT, activate_cute_dsl
from .cutlass_pkgs import cutlass_include_dirs as cutlass_include_dirs  # re-exported for the build
from .errors import MissingToolchain

# Python kernel languages: the module that must import and the package that provides it.
PYTHON_FRAMEWORK_MODULES: dict[str, tuple[str, str]] = {
    "triton": ("triton", "pip install triton"),
    "gluon": ("triton.experimental.gluon", "pip install 'triton>=3.5' (Gluon ships with Triton)"),
    "cute_dsl": ("cutlass.cute", CUTE_DSL_HINT),
    "cutile": ("cuda.tile", "pip install cuda-tile"),
    "cudnn_frontend": ("cudnn", "pip install nvidia-cudnn-frontend"),
}


def module_available(name: str) -> bool:
    """Whether `name` (dotted) can be imported, without importing more than its parent packages."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a missing parent package raises instead of returning None
        return False


def require_python_framework(language: str) -> None:
    entry = PYTHON_FRAMEWORK_MODULES.get(language)
    if language == "cute_dsl" and entry is not None and not module_available(entry[0]):
        activate_cute_dsl()  # a DSL installed with pip --target: its .pth was never read
    if entry is not None and not module_available(entry[0]):
        module, install = entry
        raise MissingToolchain(
            f"the candidate's language {language!r} needs the Python module {module!r}, which is not "
            f"installed on the GPU host: {install}"
        )


def find_executable(name: str, env: Mapping[str, str], python_bin: Path | None = None) -> str | None:
    """`name` on the job's PATH, else next to this Python (pip installs ninja there, and a sandbox's
    PATH may not include the interpreter's bin directory)."""
    found = shutil.which(name, path=env.get("PATH", os.defpath))
    if found:
        return found
    beside = (python_bin or Path(sys.executable).parent) / name
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


@dataclass
class Toolchain:
    """What a torch-extension build will use; `path_prepend` goes on the build subprocess's PATH."""

    cxx: str
    ninja: str
    nvcc: str | None = None
    cuda_home: str | None = None
    include_dirs: list[str] = field(default_factory=list)
    library_dirs: list[str] = field(default_factory=list)
    path_prepend: list[str] = field(default_factory=list)


def require_cxx_toolchain(env: Mapping[str, str], python_bin: Path | None = None) -> Toolchain:
    cxx = find_executable(env.get("CXX", "c++"), env, python_bin)
    if cxx is None:
        raise MissingToolchain(
            "no C++ compiler ('c++') on the GPU host's PATH: install g++ (apt-get install g++) or set CXX"
        )
    ninja = find_executable("ninja", env, python_bin)
    if ninja is None:
        raise MissingToolchain("torch extensions build with ninja, which is not installed: pip install ninja")
    prepend = [str(Path(ninja).parent)] if shutil.which("ninja", path=env.get("PATH", "")) is None else []
    return Toolchain(cxx=cxx, ninja=ninja, path_prepend=prepend)


def require_cuda(
    tc: Toolchain, env: Mapping[str, str], torch_cuda: str | None, cuda_home: str | None
) -> None:
    """CUDA sources need a CUDA build of torch and nvcc (`cuda_home` as torch found it)."""
    if torch_cuda is None:
        raise MissingToolchain(
            "the candidate has CUDA sources but this torch is a CPU build: install a CUDA build of torch "
            "(and the CUDA toolkit with nvcc) on the GPU host"
        )
    home = env.get("CUDA_HOME") or env.get("CUDA_PATH") or cuda_home
    nvcc = Path(home) / "bin" / "nvcc" if home else None
    if nvcc is None or not nvcc.is_file():
        found = find_executable("nvcc", env)
        if found is None:
            raise MissingToolchain(
                f"the candidate has CUDA sources but nvcc was not found (CUDA_HOME={home!r}): install the "
                f"CUDA {torch_cuda} toolkit (nvcc) or set CUDA_HOME"
            )
        nvcc = Path(found)
        home = str(nvcc.resolve().parent.parent)
    tc.nvcc, tc.cuda_home = str(nvcc), home


def _nvidia_package_dirs() -> list[Path]:
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    return [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []


def cudnn_dirs(
    env: Mapping[str, str], system: tuple[str, ...] = ("/usr/include", "/usr/local/cuda/include")
) -> tuple[list[str], list[str]]:
    """(include dirs, library dirs) for cuDNN: the system's, or the nvidia-cudnn wheel torch depends on;
    plus the cuDNN frontend's header-only C++ API when its wheel is installed."""
    includes: list[str] = []
    libs: list[str] = []
    candidates = [Path(d) for d in system]
    if env.get("CUDNN_HOME"):
        candidates.append(Path(env["CUDNN_HOME"]) / "include")
    for base in _nvidia_package_dirs():
        candidates += sorted(base.glob("*/include")) + sorted(base.glob("cu*/*/include"))
    for inc in candidates:
        if (inc / "cudnn.h").is_file() or (inc / "cudnn_version.h").is_file():
            includes.append(str(inc))
            lib = inc.parent / "lib"
            if lib.is_dir():
                libs.append(str(lib))
            break
    if not includes:
        raise MissingToolchain(
            "the candidate uses cuDNN but cudnn.h was not found (system include dirs, $CUDNN_HOME, the "
            "nvidia-cudnn wheel): pip install nvidia-cudnn-cu13 (or the cuDNN dev package)"
        )
    try:
        fe = importlib.util.find_spec("cudnn")
    except (ImportError, ValueError):
        fe = None
    if fe is not None and fe.origin:
        fe_inc = Path(fe.origin).parent.parent / "include"
        if (fe_inc / "cudnn_frontend.h").is_file():
            includes.append(str(fe_inc))
    return includes, libs


def link_alias(lib_dir: Path, name: str, dest: Path) -> str | None:
    """Wheels ship only `libcudnn.so.9`; `-lcudnn` needs `libcudnn.so`. Make that link in the (fresh)
    build directory and return it as a library dir; None when the unversioned name already exists."""
    if (lib_dir / f"lib{name}.so").exists():
        return None
    versioned = sorted(lib_dir.glob(f"lib{name}.so.*"))
    if not versioned:
        return None
    dest.mkdir(parents=True, exist_ok=True)
    link = dest / f"lib{name}.so"
    if not link.exists():
        link.symlink_to(versioned[0])
    return str(dest)
