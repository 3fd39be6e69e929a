"""Production mode for command tasks: a task's cases are its private shapes.

In production mode every case of a command task (correctness and performance) is private, as a native
operator's `shapes.json` is: its id and parameters exist only in the task file (in the operator's
directory, hidden from agents), inside evaluation jobs, and in the campaign's opaque-id mapping. This
module gives the privacy machinery (`tools/records/privacy.py`) what it needs for a command task:

- `case_values`: id -> the integer parameters of every case (what the leak scanner searches for);
- `public_task_text`: the task file without its cases — what the workspace's `op/` may show the agents;
- `public_tree_text`: the pristine tree's own text (its test, benchmark and sources are given to every
  agent, so a number written there is public and finding it proves nothing).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aka_graph.tasks.loader import LoadedTask, is_command_task, load_task

PUBLIC_HEADER = (
    "# The command task as agents see it in production mode: its cases (ids and parameters) are private.\n"
    "# The commands receive them at evaluation time ({cases} / {seed}); results name them by opaque ids.\n"
)
TEXT_LIMIT = 2_000_000  # bytes of tree text read at most (large binaries and data files are skipped)


def command_task_of(op_dir: Path) -> LoadedTask | None:
    """The command task at `op_dir` (a task file or its directory), or None for any other operator."""
    return load_task(op_dir) if is_command_task(Path(op_dir)) else None


def case_values(loaded: LoadedTask) -> dict[str, tuple[int, ...]]:
    """Every case's id and its integer parameters (bools and non-integers are not shape values)."""
    values: dict[str, tuple[int, ...]] = {}
    for case in loaded.task.all_cases:
        params = {k: v for k, v in case.params().items() if k != "id"}
        values[case.id] = tuple(_ints(params))
    return values


def _ints(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, dict):
        return [i for v in value.values() for i in _ints(v)]
    if isinstance(value, list | tuple):
        return [i for v in value for i in _ints(v)]
    return []


def public_task_text(loaded: LoadedTask) -> str:
    """The task file without its cases, as TOML (every other field as the author wrote it)."""
    task = loaded.task
    lines = [PUBLIC_HEADER, f"name = {_q(task.name)}", 'source_tree = "../tree"']
    for key in ("editable", "scratch", "stale_paths", "build_outputs"):
        lines.append(f"{key} = {json.dumps(list(getattr(task, key)))}")
    for table in ("env", "rebuild_env"):
        entries = getattr(task, table)
        if entries:
            lines += ["", f"[{table}]", *(f"{_q(k)} = {_q(v)}" for k, v in entries.items())]
    for phase in ("build", "correctness", "performance"):
        command = getattr(task.commands, phase)
        if command is not None:
            lines += ["", f"[commands.{phase}]", f"argv = {json.dumps(list(command.argv))}"]
            lines.append(f"timeout_s = {command.timeout_s}")
    perf = task.performance
    lines += ["", "[performance]", f"timing_keys = {json.dumps(list(perf.timing_keys))}"]
    lines += [f"unit = {_q(perf.unit)}", f"method = {_q(perf.method)}"]
    if perf.capture_key is not None:
        lines.append(f"capture_key = {_q(perf.capture_key)}")
    counts = f"{len(task.cases.correctness)} correctness, {len(task.cases.performance)} performance (scored)"
    lines += ["", f"# cases: {counts}; every performance case is also checked for correctness"]
    return "\n".join(lines) + "\n"


def _q(text: str) -> str:
    """A TOML basic string (JSON's escapes are valid TOML)."""
    return json.dumps(text)


def public_tree_text(loaded: LoadedTask) -> str:
    """The text of the pristine tree's files (what every agent is given), up to `TEXT_LIMIT` bytes."""
    parts, total = [], 0
    for rel in loaded.files():
        path = loaded.tree / rel
        size = path.stat().st_size
        if total + size > TEXT_LIMIT:
            continue
        data = path.read_bytes()
        if b"\0" in data[:4096]:  # a binary file
            continue
        parts.append(data.decode("utf-8", errors="replace"))
        total += size
    return "\n".join(parts)


def write_public_task(loaded: LoadedTask, dest: Path) -> Path:
    """`dest` <- the public task file (production mode's `op/` copy)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(public_task_text(loaded))
    return dest
