"""Where a workload's safetensors blob lives (`--blob-root`); torch-free, so the coordinator can check an
operator before it starts a job.

FlashInfer-Bench workloads name their blobs relative to the dataset root (or by an absolute path on the
machine that recorded them); the blobs are not shipped with a problem. A missing blob is a user error that
names the file, the input and the flag that supplies the root.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .opmodel import Operator, Workload


def blob_root(op: Operator) -> Path | None:
    return op.blob_root


def _suffixes(root: Path, rel: str) -> list[Path]:
    """`root` joined with `rel`, then with `rel` less one leading component at a time, as SOL's driver
    resolves blobs (`data/flashinfer-trace/blob/x.safetensors` under a root that is the
    `flashinfer-trace` directory itself)."""
    parts = Path(rel.lstrip("/")).parts
    return [root.joinpath(*parts[start:]) for start in range(len(parts))]


def candidates(op: Operator, rel: str) -> list[Path]:
    """Where a descriptor's `path` may be, in order: under the blob root (as given without a leading
    '/', then less leading components), beside the operator's files (likewise: SOL's driver looks in
    the problem's own directory first), then as given."""
    path = Path(rel)
    root = blob_root(op)
    found = _suffixes(root, rel) if root is not None else []
    if not path.is_absolute():
        found += _suffixes(op.directory, rel)
    found.append(path)
    return list(dict.fromkeys(found))


def resolve(op: Operator, desc: dict[str, Any]) -> Path | None:
    return next((p for p in candidates(op, str(desc.get("path") or "")) if p.is_file()), None)


def missing_blobs(op: Operator, workloads: list[Workload]) -> str | None:
    """The user-facing error for the first safetensors input that cannot be found, else None."""
    missing = [
        (wl.id, name, str(desc.get("path")))
        for wl in workloads
        for name, desc in wl.descriptors.items()
        if desc.get("type") == "safetensors" and resolve(op, desc) is None
    ]
    if not missing:
        return None
    wl_id, name, rel = missing[0]
    root = blob_root(op)
    where = f"under --blob-root {root}" if root else f"beside {op.directory / 'workload.jsonl'}"
    return (
        f"{op.directory / 'workload.jsonl'}: workload {wl_id} reads input {name!r} from the safetensors "
        f"file {rel}, which is not {where} ({len(missing)} blob reference(s) missing in all). The blobs "
        "are not shipped with the problem: pass --blob-root DIR, the dataset directory those paths are "
        "relative to"
    )


def blob_files(op: Operator, workloads: list[Workload]) -> dict[str, Path]:
    """Every blob the workloads read: {descriptor path: file found} (missing ones left out)."""
    found = {}
    for wl in workloads:
        for desc in wl.descriptors.values():
            if desc.get("type") == "safetensors" and (path := resolve(op, desc)) is not None:
                found[str(desc.get("path"))] = path
    return found
