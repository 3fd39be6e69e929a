"""Loading a candidate kernel directory (worker side only: the trusted parent never imports it).

`solution.json` (SOL solution) names the entry point and the calling convention; without it SOL
operators call `kernel.py::run` destination-passing (unless kernel.py sets
`DESTINATION_PASSING_STYLE = False`), native operators instantiate `kernel.py::Model`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .modules import load_file_module
from .opmodel import OperatorError

CPP_LANGUAGES = ("cuda_cpp", "cutlass", "cudnn", "cublas")


class CompileError(RuntimeError):
    """The candidate failed to import or build."""


@dataclass
class CandidateSpec:
    file: Path
    symbol: str
    destination_passing: bool
    languages: list[str]


def read_spec(kernel_dir: Path, native: bool) -> CandidateSpec:
    sol_path = kernel_dir / "solution.json"
    if sol_path.is_file():
        try:
            solution = json.loads(sol_path.read_text())
        except json.JSONDecodeError as exc:
            raise OperatorError(f"{sol_path}: not valid JSON ({exc}); fix it or delete it") from None
        spec = solution.get("spec", solution)
        entry = str(spec.get("entry_point") or "kernel.py::run")
        if "::" not in entry:
            raise OperatorError(f"{sol_path}: entry_point {entry!r} must look like 'kernel.py::run'")
        file, symbol = entry.split("::", 1)
        dps = spec.get("destination_passing_style")
        return CandidateSpec(
            kernel_dir / file,
            symbol,
            True if dps is None else bool(dps),
            [str(x) for x in spec.get("languages") or []],
        )
    if not (kernel_dir / "kernel.py").is_file():
        raise OperatorError(f"{kernel_dir}: no kernel.py (and no solution.json naming another entry point)")
    return CandidateSpec(kernel_dir / "kernel.py", "Model" if native else "run", not native, [])


def import_candidate(spec: CandidateSpec) -> tuple[Any, bool]:
    """Import the entry point; returns (callable or Model class, destination_passing)."""
    if not spec.file.is_file():
        raise CompileError(f"{spec.file}: entry-point file not found")
    try:
        module = load_file_module(spec.file, "candidate_kernel")
    except BaseException as exc:  # SyntaxError, ImportError, anything raised at import
        import traceback

        tail = "".join(traceback.format_exception(exc)[-6:])
        raise CompileError(
            f"importing {spec.file.name} failed: {type(exc).__name__}: {exc}\n{tail}"
        ) from None
    target = getattr(module, spec.symbol, None)
    if target is None:
        raise CompileError(f"{spec.file.name} defines no {spec.symbol!r} (the entry point)")
    dps = spec.destination_passing
    if spec.symbol != "Model" and getattr(module, "DESTINATION_PASSING_STYLE", None) is False:
        dps = False
    return target, dps
