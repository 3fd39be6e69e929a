"""`submission.json` for a command task: the incumbent's editable files, inlined, in the shape of a
SOL-ExecBench submission (`tools/records/submission.py`), so a campaign over a source tree ends the way
a campaign over an operator does.

A command task's candidate is not a kernel with an entry point but a set of edits to a tree that the
tree's own commands build, test and time; the submission says so: `spec.entry_point` names the task
file, `spec.command_task` carries the editable globs and the three commands, and `sources` holds every
editable file of the incumbent at its tree path (apply them over the tree to reproduce it). Nothing of
the task's cases is included (in production mode they are private).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aka_graph.tasks.job_runner import tree_files
from aka_graph.tasks.loader import LoadedTask, load_task
from aka_graph.tools.records.layout import CampaignLayout
from aka_graph.tools.records.memory import atomic_write_text
from aka_graph.tools.records.submission import SubmissionError, infer_languages

LANGUAGE_BY_SUFFIX = {".cu": "cuda_cpp", ".cuh": "cuda_cpp", ".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp",
                      ".c": "c", ".h": "cpp", ".hpp": "cpp"}


def editable_sources(loaded: LoadedTask, kernel_dir: Path) -> list[dict[str, str]]:
    """Every editable file of the candidate directory, tree-relative, with its content."""
    kernel_dir = Path(kernel_dir)
    rels = [rel for rel in tree_files(kernel_dir) if loaded.is_editable(rel)] if kernel_dir.is_dir() else []
    if not rels:
        editable = loaded.task.editable
        raise SubmissionError(f"{kernel_dir} holds none of the task's editable files ({editable})")
    return [{"path": rel, "content": (kernel_dir / rel).read_text()} for rel in rels]


def source_languages(sources: list[dict[str, str]]) -> list[str]:
    """Languages by file: Python files by the DSL they import, C/C++/CUDA files by suffix."""
    found: list[str] = []
    for source in sources:
        suffix = Path(source["path"]).suffix
        if suffix == ".py":
            found += infer_languages(source["content"])
        elif suffix in LANGUAGE_BY_SUFFIX:
            found.append(LANGUAGE_BY_SUFFIX[suffix])
    return list(dict.fromkeys(found)) or ["pytorch"]


def build_task_submission(
    op_dir: Path, kernel_dir: Path, *, author: str = "aka_graph", target_hardware: list[str] | None = None
) -> dict[str, Any]:
    loaded = load_task(op_dir)
    task = loaded.task
    sources = editable_sources(loaded, kernel_dir)
    commands = {
        phase: list(command.argv)
        for phase in ("build", "correctness", "performance")
        if (command := getattr(task.commands, phase)) is not None
    }
    return {
        "name": f"{task.name}_aka_graph",
        "definition": task.name,
        "author": author,
        "spec": {
            "languages": source_languages(sources),
            "target_hardware": target_hardware or [],
            "entry_point": loaded.path.name,
            "dependencies": [],
            "destination_passing_style": False,
            "command_task": {
                "editable": list(task.editable),
                "commands": commands,
                "timing_keys": list(task.performance.timing_keys),
            },
        },
        "sources": sources,
    }


def write_task_submission(
    ws_root: Path, op_dir: Path, kernel_dir: Path, *, author: str = "aka_graph"
) -> Path:
    """Write `<ws_root>/submission.json`; the target hardware is the campaign's platform."""
    marker = CampaignLayout(Path(ws_root)).marker
    platform = json.loads(marker.read_text()).get("platform") if marker.is_file() else None
    submission = build_task_submission(
        op_dir, kernel_dir, author=author, target_hardware=[platform] if platform else []
    )
    path = CampaignLayout(Path(ws_root)).submission
    return atomic_write_text(path, json.dumps(submission, indent=2) + "\n")
