"""`submission.json` for SOL-ExecBench problems: the incumbent as a solution with every source inlined.

A submission must stand alone (design §4): name, definition, author, spec {languages, target_hardware,
entry_point, dependencies, destination_passing_style}, and sources [{path, content}].
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aka_graph.tools.records.layout import CampaignLayout
from aka_graph.tools.records.memory import atomic_write_text

SOURCE_SUFFIXES = (".py", ".cu", ".cuh", ".cpp", ".cc", ".c", ".h", ".hpp", ".cxx")
SKIPPED_DIRS = ("__pycache__", ".triton", ".git")


class SubmissionError(ValueError):
    """The submission cannot be built; the message names the missing piece and the fix."""


def infer_languages(kernel_source: str) -> list[str]:
    """Languages by the imports a kernel uses (pytorch when it uses none of the DSLs)."""
    checks = (("cute_dsl", ("cutlass.cute", "import cutlass")), ("gluon", ("gluon",)),
              ("triton", ("import triton", "from triton")), ("cuda_cpp", ("load_inline", "cpp_extension")))
    found = [name for name, needles in checks if any(n in kernel_source for n in needles)]
    if "gluon" in found:  # Gluon solutions run through Triton
        found = ["triton" if n == "gluon" else n for n in found]
    return list(dict.fromkeys(found)) or ["pytorch"]


def collect_sources(kernel_dir: Path) -> list[dict[str, str]]:
    sources = []
    for path in sorted(kernel_dir.rglob("*")):
        rel = path.relative_to(kernel_dir)
        if not path.is_file() or any(part in SKIPPED_DIRS for part in rel.parts):
            continue
        if path.suffix in SOURCE_SUFFIXES:
            sources.append({"path": rel.as_posix(), "content": path.read_text()})
    return sources


def build_submission(op_dir: Path, kernel_dir: Path, *, author: str = "aka_graph",
                     name: str | None = None, target_hardware: list[str] | None = None,
                     languages: list[str] | None = None, dependencies: list[str] | None = None
                     ) -> dict[str, Any]:
    definition_path = Path(op_dir) / "definition.json"
    if not definition_path.is_file():
        raise SubmissionError(f"{op_dir} has no definition.json: submissions are for SOL-ExecBench problems")
    definition = json.loads(definition_path.read_text())
    kernel_dir = Path(kernel_dir)
    if kernel_dir.is_file():
        kernel_dir = kernel_dir.parent
    solution_path = kernel_dir / "solution.json"
    solution = json.loads(solution_path.read_text()) if solution_path.is_file() else {}
    spec: dict[str, Any] = dict(solution.get("spec") or {})
    entry = str(spec.get("entry_point") or "kernel.py::run")
    entry_file = kernel_dir / entry.split("::", 1)[0]
    if not entry_file.is_file():
        raise SubmissionError(f"entry point {entry!r}: {entry_file} not found; write the kernel there")
    sources = collect_sources(kernel_dir)
    spec.update({
        "languages": languages or spec.get("languages") or infer_languages(entry_file.read_text()),
        "target_hardware": spec.get("target_hardware", []) if target_hardware is None else target_hardware,
        "entry_point": entry,
        "dependencies": dependencies if dependencies is not None else spec.get("dependencies", []),
        "destination_passing_style": bool(spec.get("destination_passing_style", True)),
    })
    return {
        "name": name or solution.get("name") or f"{definition['name']}_aka_graph",
        "definition": definition["name"],
        "author": solution.get("author", author) if author == "aka_graph" else author,
        "spec": spec,
        "sources": sources,
    }


def write_submission(ws_root: Path, op_dir: Path, kernel_dir: Path, *, author: str = "aka_graph",
                     name: str | None = None, target_hardware: list[str] | None = None,
                     languages: list[str] | None = None, dependencies: list[str] | None = None) -> Path:
    """Write `<ws_root>/submission.json`; the target hardware defaults to the campaign's platform."""
    if target_hardware is None:
        marker = CampaignLayout(Path(ws_root)).marker
        platform = json.loads(marker.read_text()).get("platform") if marker.is_file() else None
        target_hardware = [platform] if platform else []
    submission = build_submission(op_dir, kernel_dir, author=author, name=name,
                                  target_hardware=target_hardware, languages=languages,
                                  dependencies=dependencies)
    path = CampaignLayout(Path(ws_root)).submission
    return atomic_write_text(path, json.dumps(submission, indent=2) + "\n")
