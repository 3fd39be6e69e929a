"""Job files: the input allowlist (hashed as it is copied) and the paths synced back.

The sha256 is taken from the very bytes written into the job, so an edit made after upload can never
change what was evaluated; syncing back never follows a symlink out of the job directory.
"""

from __future__ import annotations

import hashlib
import posixpath
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

CHUNK = 1 << 20


class JobInputError(ValueError):
    """An input or sync path the caller got wrong (names the path and the fix)."""


def check_job_relative(path: str, what: str) -> str:
    """Normalise a job-relative path; refuse absolute paths and `..` escapes."""
    norm = posixpath.normpath(path)
    if path.startswith("/") or norm == ".." or norm.startswith("../") or norm in ("", "."):
        raise JobInputError(f"{what} {path!r} must be a relative path inside the job directory")
    return norm


def iter_input_files(inputs: Mapping[str, Path]) -> Iterator[tuple[str, Path]]:
    """(job-relative destination, local source file) for every file of the allowlist, directories expanded."""
    for dest, source in inputs.items():
        rel = check_job_relative(dest, "input destination")
        source = Path(source)
        if source.is_file():
            yield rel, source
        elif source.is_dir():
            for path in sorted(source.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    yield f"{rel}/{path.relative_to(source).as_posix()}", path
        else:
            raise JobInputError(
                f"input {dest!r}: {source} does not exist; pass an existing file or directory in job.inputs"
            )


def copy_hashed(source: Path, write: object) -> str:
    """Stream `source` through sha256 into `write(chunk)`; return the hex digest."""
    digest = hashlib.sha256()
    with source.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            write(chunk)  # type: ignore[operator]
    return digest.hexdigest()


def stage_inputs(inputs: Mapping[str, Path], job_dir: Path) -> dict[str, str]:
    """Copy the allowlist into `job_dir`; return {job-relative file: sha256 of the bytes written}."""
    digests: dict[str, str] = {}
    for rel, source in iter_input_files(inputs):
        target = job_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as out:
            digests[rel] = copy_hashed(source, out.write)
        shutil.copymode(source, target)
    return digests


def sha256_file(path: Path) -> str:
    return copy_hashed(path, lambda _chunk: None)


def sync_back(job_dir: Path, paths: list[str], results_dir: Path) -> dict[str, Path]:
    """Copy each requested path (file or directory) that exists and stays inside `job_dir`."""
    synced: dict[str, Path] = {}
    root = job_dir.resolve()
    for requested in paths:
        rel = check_job_relative(requested, "sync_back path")
        source = job_dir / rel
        if not source.exists() or source.is_symlink():
            continue
        if not source.resolve().is_relative_to(root):
            continue  # a symlinked parent pointing out of the job: never copy host files back
        target = results_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            _copy_tree_no_links(source, target)
        else:
            shutil.copyfile(source, target)
        synced[requested] = target
    return synced


def _copy_tree_no_links(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        if entry.is_symlink():
            continue
        if entry.is_dir():
            _copy_tree_no_links(entry, target / entry.name)
        elif entry.is_file():
            shutil.copyfile(entry, target / entry.name)
