"""Load a command-task file: TOML parsed, schema-validated, then checked against the tree it names.

Every problem comes back as one line naming the file, the field and the fix (`TaskFileError.lines`); the
command line prints them and exits 2.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from aka_graph.tasks.job_runner import PLACEHOLDER, matches, tree_files
from aka_graph.tasks.schema import TASK_FILE_NAME, CommandTask


class TaskFileError(ValueError):
    """A task file that cannot be used; `lines` holds one problem per line."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class LoadedTask:
    """A validated task with its paths resolved."""

    task: CommandTask
    path: Path
    tree: Path

    @property
    def name(self) -> str:
        return self.task.name

    def files(self) -> list[str]:
        """Every file of the pristine tree (tree-relative), scratch excluded."""
        return [rel for rel in tree_files(self.tree) if not self.is_scratch(rel)]

    def is_editable(self, rel: str) -> bool:
        return matches(rel, self.task.editable) and not self.is_scratch(rel)

    def is_scratch(self, rel: str) -> bool:
        """Written by builds, never part of the task: scratch, stale caches, build outputs."""
        task = self.task
        return matches(rel, [*task.scratch, *task.stale_paths, *task.build_outputs])

    def editable_files(self) -> list[str]:
        return [rel for rel in self.files() if self.is_editable(rel)]

    def harness_files(self) -> list[str]:
        """What the guard protects: every file of the tree outside the editable set."""
        return [rel for rel in self.files() if not self.is_editable(rel)]


def task_file(path: Path) -> Path:
    path = Path(path)
    return path / TASK_FILE_NAME if path.is_dir() else path


def is_command_task(path: Path) -> bool:
    """Whether `path` is a command task: a `.toml` task file, or a directory holding `aka_task.toml`."""
    path = Path(path)
    return (path.is_file() and path.suffix == ".toml") or (path / TASK_FILE_NAME).is_file()


def load_task(path: Path) -> LoadedTask:
    """Parse, validate and resolve a task file (or a directory with `aka_task.toml`)."""
    file = task_file(path)
    if not file.is_file():
        raise TaskFileError(
            [f"{file}: no such task file; pass a .toml task file or a directory with {TASK_FILE_NAME}"]
        )
    try:
        data = tomllib.loads(file.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TaskFileError([f"{file}: not valid TOML ({exc}); fix the syntax"]) from exc
    try:
        task = CommandTask.model_validate(data)
    except ValidationError as exc:
        raise TaskFileError([_field_line(file, error) for error in exc.errors()]) from exc
    tree = Path(task.source_tree)
    tree = (tree if tree.is_absolute() else file.parent / tree).resolve()
    loaded = LoadedTask(task=task, path=file.resolve(), tree=tree)
    problems = check_tree(loaded)
    if problems:
        raise TaskFileError([f"{file}: {p}" for p in problems])
    return loaded


def _field_line(file: Path, error: dict) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "(top level)"
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "missing":
        message = "required field is missing; add it"
    elif error["type"] == "extra_forbidden":
        message = "unknown field; remove it or check its spelling"
    return f"{file}: {where}: {message}"


def check_tree(loaded: LoadedTask) -> list[str]:
    """What the schema cannot see: the tree exists, every editable glob matches a file, and no file a
    command runs (the test, the benchmark, the build script) is editable."""
    task, tree = loaded.task, loaded.tree
    if not tree.is_dir():
        return [f"source_tree: {tree} is not a directory; point it at the source tree"]
    problems = []
    files = loaded.files()
    for pattern in task.editable:
        if not any(matches(rel, [pattern]) for rel in files):
            problems.append(f"editable: {pattern!r} matches no file of {tree}; fix the glob")
    for phase in ("build", "correctness", "performance"):
        command = getattr(task.commands, phase)
        for arg in command.argv if command else []:
            rel = PLACEHOLDER.sub("", arg).removeprefix("./")
            if rel and (tree / rel).is_file() and loaded.is_editable(rel):
                problems.append(
                    f"commands.{phase}: {rel} is editable; the harness an agent may edit "
                    "cannot judge it: take it out of `editable`"
                )
    return problems
