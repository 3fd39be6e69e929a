"""Loading a candidate kernel directory (worker side only: the trusted parent never imports it).

`solution.json` (SOL solution) names the entry point, the languages and the calling convention; without
it SOL operators call `kernel.py::run` destination-passing (unless kernel.py sets
`DESTINATION_PASSING_STYLE = False`), native operators instantiate `kernel.py::Model`.

Python languages (pytorch, triton, Gluon, CuTe DSL, cuTile, cuDNN frontend) are imported; a language
whose package the host lacks is `MissingToolchain` (INFRA_ERROR naming the package). C++ languages
(cuda_cpp, cutlass, cudnn, cublas) are built into a torch extension first (`languages/torch_ext.py`: fresh
build directory, build-time limit, trimmed diagnostics) and the extension's entry point is called.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from .languages.errors import CompileError, MissingToolchain
from .languages.solution import CPP_LANGUAGES, SolutionSpec, SpecError, read_solution, stage_sources
from .languages.toolchain import PYTHON_FRAMEWORK_MODULES, require_python_framework
from .modules import load_file_module
from .opmodel import OperatorError
from .runner import interpreted_autotune

__all__ = [
    "CPP_LANGUAGES",
    "CandidateSpec",
    "CompileError",
    "MissingToolchain",
    "import_candidate",
    "read_spec",
]

CandidateSpec = SolutionSpec

# A candidate whose import fails on one of these modules ran on a host without its framework (a bare
# `cuda` is left out: it may as well be cuda-python, whose install hint would be another).
_FRAMEWORK_MODULES = {
    module: (language, install)
    for language, (full, install) in PYTHON_FRAMEWORK_MODULES.items()
    for module in {full, full.split(".")[0]} - {"cuda"}
}


def read_spec(kernel_dir: Path, native: bool) -> SolutionSpec:
    try:
        return read_solution(kernel_dir, native)
    except SpecError as exc:
        raise OperatorError(str(exc)) from None


def _scratch_root() -> Path:
    """The evaluation's private build area: the worker's $TORCH_EXTENSIONS_DIR is a fresh directory
    per evaluation (worker_proc.worker_env)."""
    root = Path(os.environ.get("TORCH_EXTENSIONS_DIR") or tempfile.gettempdir())
    root.mkdir(parents=True, exist_ok=True)
    return root


def _arch_list(device_type: str) -> str | None:
    if device_type != "cuda":
        return None
    import torch

    major, minor = torch.cuda.get_device_capability()
    return f"{major}.{minor}"


def _import_python(spec: SolutionSpec) -> Any:
    for language in spec.languages:
        require_python_framework(language)
    entry = spec.file
    if spec.missing_on_disk():  # sources inlined in solution.json: import them from a fresh copy
        staged = stage_sources(spec, Path(tempfile.mkdtemp(prefix="src_", dir=_scratch_root())))
        entry = staged / spec.entry_file
    if not entry.is_file():
        raise CompileError(f"{spec.entry_file}: entry-point file not found")
    root = entry.parents[len(Path(spec.entry_file).parts) - 1]  # the solution's directory
    try:
        return load_file_module(entry, "candidate_kernel", root)
    except ModuleNotFoundError as exc:
        known = _FRAMEWORK_MODULES.get(exc.name or "")
        if known is not None:
            raise MissingToolchain(
                f"the candidate imports {exc.name!r} ({known[0]}), which is not installed on the GPU "
                f"host: {known[1]}"
            ) from None
        raise _import_error(entry, exc) from None
    except BaseException as exc:  # SyntaxError, ImportError, anything raised at import
        raise _import_error(entry, exc) from None


def _import_error(entry: Path, exc: BaseException) -> CompileError:
    import traceback

    tail = "".join(traceback.format_exception(exc)[-6:])
    return CompileError(f"importing {entry.name} failed: {type(exc).__name__}: {exc}\n{tail}")


def _import_cpp(spec: SolutionSpec, device_type: str, build_timeout: float | None) -> Any:
    from .languages.torch_ext import DEFAULT_BUILD_TIMEOUT_S, EXT_NAME, build_extension

    so_path = build_extension(
        spec,
        _scratch_root(),
        timeout_s=build_timeout or DEFAULT_BUILD_TIMEOUT_S,
        device_type=device_type,
        arch_list=_arch_list(device_type),
    )
    try:
        return load_file_module(so_path, EXT_NAME)
    except ImportError as exc:
        raise CompileError(f"the built extension does not load: {exc}") from None


def import_candidate(
    spec: SolutionSpec, *, device_type: str = "cpu", build_timeout: float | None = None
) -> tuple[Any, bool]:
    """Build (C++ languages) and import the entry point; returns (callable or Model class,
    destination_passing). Raises CompileError (the candidate's fault) or MissingToolchain (the host's)."""
    module = _import_cpp(spec, device_type, build_timeout) if spec.is_cpp else _import_python(spec)
    target = getattr(module, spec.symbol, None)
    if target is None:
        raise CompileError(f"{spec.entry_file} defines no {spec.symbol!r} (the entry point)")
    if device_type == "cpu":
        interpreted_autotune()
    dps = spec.destination_passing
    if spec.symbol != "Model" and getattr(module, "DESTINATION_PASSING_STYLE", None) is False:
        dps = False
    return target, dps
