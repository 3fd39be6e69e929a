"""Harness guard: the task's tests, benchmarks and every other file outside the editable set are hashed
before and after each agent run (and each outside-loop iteration); a change is reverted from the
pristine tree, recorded against the trial, and the trial is not scored.

Files that builds write (scratch, stale caches, build outputs, `__pycache__`) are not the harness and
are ignored; they never enter an evaluation job either.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from aka_graph.tasks.job_runner import sha256_file, tree_files
from aka_graph.tasks.loader import LoadedTask


@dataclass
class GuardReport:
    modified: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    reverted: bool = False

    @property
    def tampered(self) -> bool:
        return bool(self.modified or self.added or self.removed)

    @property
    def paths(self) -> list[str]:
        return sorted(self.modified + self.added + self.removed)

    def message(self) -> str:
        parts = [
            f"{what}: {', '.join(paths)}"
            for what, paths in (("modified", self.modified), ("added", self.added), ("removed", self.removed))
            if paths
        ]
        return "harness files changed (" + "; ".join(parts) + ")" + (", reverted" if self.reverted else "")


class HarnessGuard:
    """Snapshots and restores the non-editable files of a working copy of the task's tree."""

    def __init__(self, loaded: LoadedTask, pristine: Path | None = None) -> None:
        self.loaded = loaded
        self.pristine = Path(pristine) if pristine is not None else loaded.tree

    def snapshot(self, tree: Path) -> dict[str, str]:
        """sha256 of every harness file (everything but editable files and build scratch) in `tree`."""
        return {
            rel: sha256_file(Path(tree) / rel)
            for rel in tree_files(Path(tree))
            if not self.loaded.is_editable(rel) and not self.loaded.is_scratch(rel)
        }

    def check(self, tree: Path, before: dict[str, str]) -> GuardReport:
        after = self.snapshot(tree)
        return GuardReport(
            modified=sorted(p for p in before.keys() & after.keys() if before[p] != after[p]),
            added=sorted(after.keys() - before.keys()),
            removed=sorted(before.keys() - after.keys()),
        )

    def revert(self, tree: Path, report: GuardReport) -> GuardReport:
        """Put back the pristine bytes of changed or removed files; delete added ones."""
        tree = Path(tree)
        for rel in report.modified + report.removed:
            target = tree / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink() or target.is_file():
                target.unlink()
            shutil.copy2(self.pristine / rel, target)
        for rel in report.added:
            (tree / rel).unlink(missing_ok=True)
        report.reverted = True
        return report

    def enforce(
        self, tree: Path, before: dict[str, str], record: Path | None = None, **labels: str | int | None
    ) -> GuardReport:
        """Check, revert any change, and record it (JSON lines at `record`, with the trial's labels)."""
        report = self.check(tree, before)
        if report.tampered:
            self.revert(tree, report)
            if record is not None:
                record.parent.mkdir(parents=True, exist_ok=True)
                entry = {"at": time.time(), **labels, **asdict(report), "message": report.message()}
                with record.open("a") as handle:
                    handle.write(json.dumps(entry, sort_keys=True) + "\n")
        return report
