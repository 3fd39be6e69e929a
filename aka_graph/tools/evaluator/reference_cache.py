"""Coordinator side of the reference-timing cache (harness/refcache.py): the store on this host, one file
per operator digest, carried into each evaluation job and merged back from it.

A job's HOME is its own discarded directory and its file systems may be read-only, so the harness cannot
keep the cache itself; the coordinator stages the operator's entries as `refcache.json` and reads the file
back after the job. The harness reads it before any worker exists and rewrites it after every worker is
dead, and writes entries only when no candidate could have reached the store (jailed worker or isolated
job); here every entry is checked again (finite positive latency, a known method) before it is stored.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from aka_graph.tools.evaluator.harness.refcache import CARRY_VAR, files_digest, valid_entry

JOB_FILE = "refcache.json"


def store_dir() -> Path:
    return Path(os.environ.get("AKA_CACHE_DIR") or "~/.cache/aka_graph").expanduser() / "reference_timing"


def operator_key(op_inputs: dict[str, Path]) -> str:
    """The digest the harness computes over the job's op/ directory, from the files staged there."""
    files = {name.removeprefix("op/"): path for name, path in op_inputs.items() if name.startswith("op/")}
    return files_digest({rel: path for rel, path in files.items() if path.is_file()})


def carry_in(op_inputs: dict[str, Path], store: Path | None = None) -> tuple[dict[str, Path], dict[str, str]]:
    """(job inputs, job environment) that carry the operator's stored entries into the job."""
    path = (store or store_dir()) / f"{operator_key(op_inputs)}.json"
    inputs = {JOB_FILE: path} if path.is_file() else {}
    return inputs, {CARRY_VAR: JOB_FILE}


def carry_out(synced: Path | None, op_inputs: dict[str, Path], store: Path | None = None) -> int:
    """Merge the job's entries into the store; returns how many were new. Anything malformed is dropped."""
    if synced is None or not Path(synced).is_file():
        return 0
    try:
        entries = json.loads(Path(synced).read_text()).get("entries")
    except (OSError, ValueError, AttributeError):
        return 0
    if not isinstance(entries, dict):
        return 0
    good = {k: v for k, v in entries.items() if isinstance(k, str) and len(k) == 64 and valid_entry(v)}
    directory = store or store_dir()
    path = directory / f"{operator_key(op_inputs)}.json"
    try:
        known: dict[str, Any] = json.loads(path.read_text()).get("entries", {}) if path.is_file() else {}
    except (OSError, ValueError, AttributeError):
        known = {}
    new = {k: v for k, v in good.items() if k not in known}
    if not new:
        return 0
    with contextlib.suppress(OSError):
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"entries": {**known, **new}}))
        os.replace(tmp, path)
        return len(new)
    return 0
