"""The operator as the untrusted worker sees it (issue 13, class 6): the definition and only the
workloads this job evaluates, with only their blobs.

The worker imports the candidate, so whatever it can read the candidate can read. Handing it the whole
operator directory leaked every workload's shapes (also unselected, private ones) through
`workload.jsonl`. The trusted parent therefore writes a filtered copy into the job's build directory once
it has chosen the workloads, and the jail (isolate.py) covers the original directory and the blob root
with empty read-only mounts, so neither a relative nor an absolute path reaches them.

Standard library only (the parent spawns the workers before it imports torch).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from .blobs import resolve
from .opmodel import HIDDEN_FILES, Operator

BLOB_DIR = "blobs"  # inside the view: each selected workload's safetensors, renamed by position
LISTS = ("workload.jsonl", "shapes.json")  # the files that list every workload: rewritten, never copied


def _place(src: Path, dest: Path, link: bool) -> None:
    """A hard link where allowed (the jail mounts it read-only, and blobs may be large), else a copy."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if link:
        try:
            os.link(src, dest)
            return
        except OSError:
            pass
    shutil.copyfile(src, dest)


def _sol_rows(op: Operator) -> list[str]:
    """workload.jsonl's non-empty lines: the i-th is op.workloads[i] (sol_format skips blank lines)."""
    return [line for line in (op.directory / "workload.jsonl").read_text().splitlines() if line.strip()]


def _rehome_blobs(op: Operator, row: dict[str, Any], position: int, dest: Path, link: bool) -> None:
    """Copy (link) this workload's safetensors into the view and point its descriptors there."""
    inner = row["workload"] if isinstance(row.get("workload"), dict) else row
    for k, desc in enumerate((inner.get("inputs") or {}).values()):
        if not isinstance(desc, dict) or desc.get("type") != "safetensors":
            continue
        found = resolve(op, desc)
        if found is None:
            continue  # the parent reported the missing blob before any worker ran (Session)
        rel = f"{BLOB_DIR}/{position}_{k}.safetensors"
        _place(found, dest / rel, link)
        desc["path"] = rel


def write_view(op: Operator, indices: list[int], dest: Path, link: bool = False) -> list[int]:
    """Write the filtered operator into `dest` (an empty directory); return the parent's indices of the
    workloads it holds, in the order the worker's loader will number them."""
    chosen = sorted(set(indices))
    dest.mkdir(parents=True, exist_ok=True)
    src = op.directory
    if op.kind == "sol":
        shutil.copyfile(src / "definition.json", dest / "definition.json")
        rows = _sol_rows(op)
        lines = []
        for position, idx in enumerate(chosen):
            row = json.loads(rows[idx])
            _rehome_blobs(op, row, position, dest, link)
            lines.append(json.dumps(row))
        (dest / "workload.jsonl").write_text("\n".join(lines) + "\n")
    else:
        shapes = json.loads((src / "shapes.json").read_text())
        entries = list(shapes.values()) if isinstance(shapes, dict) else list(shapes)
        ids = [op.workloads[i].id for i in chosen]
        kept = {wid: entries[i] for wid, i in zip(ids, chosen, strict=True)}
        (dest / "shapes.json").write_text(json.dumps(kept))
        # the reference, its input maker and any module they import beside them; never data files
        for path in sorted(src.glob("*.py")):
            shutil.copyfile(path, dest / path.name)
    for path in dest.rglob("*"):
        if path.name in HIDDEN_FILES or (path.name in LISTS and path.parent != dest):
            path.unlink()
    return chosen


def hidden_paths(op_dir: Path, blob_root: Path | None, keep: list[Path]) -> list[Path]:
    """The directories the jail covers: the operator's own and the blob root, unless one of them holds
    something the worker must reach (`keep`: the harness package, its build directory, the kernel), in
    which case that one stays visible (the filtered view is still all the worker is pointed at)."""
    out = []
    for path in (op_dir, blob_root):
        if path is None or not Path(path).exists():
            continue
        path = Path(path).resolve()
        if any(k.resolve() == path or path in k.resolve().parents for k in keep):
            continue
        out.append(path)
    return out
