"""What a candidate directory declares: SOL-ExecBench `solution.json` (or a bare `kernel.py`).

Mirrors SOL-ExecBench's solution schema so its solutions evaluate unchanged: `spec.languages`,
`entry_point` `file::symbol` (a `.py` file for Python languages, a C/C++/CUDA file for C++ ones, never
mixed), `destination_passing_style` (default true), `binding` (C++: `torch`, the default),
`compile_options` (`cflags`, `cuda_cflags`, `ld_flags`; an empty object takes SOL's defaults, no object
at all means no extra flags, as SOL's builder does), `dependencies`, and `sources` `[{path, content}]`.
A source present on disk is used as it is (the agent edits files); `content` fills in paths that are
absent (a submission with every source inlined). Standard library only: the trusted parent's source
policy reads inlined Python sources through `inline_sources`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

CPP_LANGUAGES = frozenset({"cuda_cpp", "cutlass", "cudnn", "cublas"})
PYTHON_LANGUAGES = frozenset({"pytorch", "triton", "gluon", "cute_dsl", "cutile", "cudnn_frontend"})
CPP_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")
HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".hxx", ".inl")
BINDINGS = ("torch",)
SOL_DEFAULT_CUDA_CFLAGS = ("-O3", "--use_fast_math")
SOL_DEFAULT_LD_FLAGS = ("-lcuda",)


class SpecError(ValueError):
    """The candidate's solution.json is malformed or inconsistent (the candidate's fault)."""


@dataclass(frozen=True)
class CompileOptions:
    cflags: tuple[str, ...] = ()
    cuda_cflags: tuple[str, ...] = ()
    ld_flags: tuple[str, ...] = ()


@dataclass
class SolutionSpec:
    kernel_dir: Path
    entry_file: str  # relative to kernel_dir, posix
    symbol: str
    destination_passing: bool
    languages: list[str]
    binding: str = "torch"
    dependencies: list[str] = field(default_factory=list)
    compile_options: CompileOptions = CompileOptions()
    inline: dict[str, str] = field(default_factory=dict)  # path -> content from solution.json

    @property
    def is_cpp(self) -> bool:
        return bool(CPP_LANGUAGES & set(self.languages)) or self.entry_file.endswith(
            CPP_SUFFIXES + HEADER_SUFFIXES
        )

    @property
    def file(self) -> Path:
        return self.kernel_dir / self.entry_file

    def missing_on_disk(self) -> dict[str, str]:
        """Inlined sources with no file of that path in the kernel directory."""
        return {p: c for p, c in self.inline.items() if not (self.kernel_dir / p).is_file()}


def _safe_path(path: Any, where: Path) -> str:
    if not isinstance(path, str) or not path:
        raise SpecError(f"{where}: every source needs a non-empty 'path'")
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts:
        raise SpecError(
            f"{where}: source path {path!r} must be relative and stay inside the kernel directory"
        )
    return pure.as_posix()


def _flags(value: Any, name: str, where: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise SpecError(f"{where}: compile_options.{name} must be a list of strings")
    return tuple(value)


def _compile_options(raw: Any, where: Path) -> CompileOptions:
    if raw is None:
        return CompileOptions()
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: compile_options must be an object with cflags, cuda_cflags, ld_flags")
    unknown = set(raw) - {"cflags", "cuda_cflags", "ld_flags"}
    if unknown:
        raise SpecError(
            f"{where}: compile_options has unknown keys {sorted(unknown)}; use cflags, cuda_cflags, ld_flags"
        )
    return CompileOptions(
        cflags=_flags(raw.get("cflags"), "cflags", where),
        cuda_cflags=_flags(raw["cuda_cflags"], "cuda_cflags", where)
        if "cuda_cflags" in raw
        else SOL_DEFAULT_CUDA_CFLAGS,
        ld_flags=_flags(raw["ld_flags"], "ld_flags", where) if "ld_flags" in raw else SOL_DEFAULT_LD_FLAGS,
    )


def load_solution_json(kernel_dir: Path) -> dict[str, Any] | None:
    path = kernel_dir / "solution.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: not valid JSON ({exc}); fix it or delete it") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: must hold a JSON object")
    return data


def inline_sources(kernel_dir: Path) -> dict[str, str]:
    """`sources[].content` of solution.json by path ({} without one, or when it is malformed: the
    worker reports that as the candidate's COMPILE_ERROR)."""
    try:
        data = load_solution_json(Path(kernel_dir))
    except SpecError:
        return {}
    found: dict[str, str] = {}
    for item in (data or {}).get("sources") or []:
        if isinstance(item, dict) and isinstance(item.get("content"), str):
            try:
                found[_safe_path(item.get("path"), Path(kernel_dir))] = item["content"]
            except SpecError:
                continue
    return found


def read_solution(kernel_dir: Path, native: bool) -> SolutionSpec:
    kernel_dir = Path(kernel_dir)
    data = load_solution_json(kernel_dir)
    where = kernel_dir / "solution.json"
    if data is None:
        if not (kernel_dir / "kernel.py").is_file():
            raise SpecError(f"{kernel_dir}: no kernel.py (and no solution.json naming another entry point)")
        return SolutionSpec(kernel_dir, "kernel.py", "Model" if native else "run", not native, [])
    spec = data.get("spec", data)
    if not isinstance(spec, dict):
        raise SpecError(f"{where}: 'spec' must be an object")
    entry = str(spec.get("entry_point") or "kernel.py::run")
    if "::" not in entry:
        raise SpecError(f"{where}: entry_point {entry!r} must look like 'kernel.py::run' or 'main.cpp::run'")
    file, symbol = entry.rsplit("::", 1)
    file = _safe_path(file, where)
    languages = [str(x) for x in spec.get("languages") or []]
    cpp = [lang for lang in languages if lang in CPP_LANGUAGES]
    py = [lang for lang in languages if lang not in CPP_LANGUAGES]
    if cpp and py:
        raise SpecError(f"{where}: C++ languages {cpp} and Python languages {py} cannot be mixed")
    if cpp and not file.endswith(CPP_SUFFIXES + HEADER_SUFFIXES):
        raise SpecError(f"{where}: C++ languages need a C/C++/CUDA entry file, got {file!r}")
    if py and not file.endswith(".py"):
        raise SpecError(f"{where}: Python languages need a .py entry file, got {file!r}")
    binding = spec.get("binding") or "torch"
    if cpp and binding not in BINDINGS:
        raise SpecError(
            f"{where}: binding {binding!r} is not supported by this evaluator; use 'torch' "
            "(a PYBIND11_MODULE torch extension, as SOL-ExecBench builds C++ solutions)"
        )
    dps = spec.get("destination_passing_style")
    inline: dict[str, str] = {}
    for item in data.get("sources") or []:
        if not isinstance(item, dict):
            raise SpecError(f"{where}: each source must be an object with path and content")
        path = _safe_path(item.get("path"), where)
        if path in inline:
            raise SpecError(f"{where}: duplicate source path {path!r}")
        if isinstance(item.get("content"), str):
            inline[path] = item["content"]
    return SolutionSpec(
        kernel_dir=kernel_dir,
        entry_file=file,
        symbol=symbol,
        destination_passing=True if dps is None else bool(dps),
        languages=languages,
        binding=str(binding),
        dependencies=[str(x) for x in spec.get("dependencies") or []],
        compile_options=_compile_options(spec.get("compile_options"), where),
        inline=inline,
    )


def stage_sources(spec: SolutionSpec, dest: Path) -> Path:
    """Copy the kernel directory into `dest` (fresh) and write the inlined sources it lacks there; the
    build never writes into the kernel directory (read-only in a sandbox, and hashed)."""
    import shutil

    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(spec.kernel_dir.rglob("*")):
        rel = path.relative_to(spec.kernel_dir)
        if "__pycache__" in rel.parts or not path.is_file():
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    for rel, content in spec.missing_on_disk().items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    return dest
