"""Correctness inputs that the trusted parent owns, so it fingerprints them after the call itself (issue 13:
"the decisions run outside the candidate's process or on data it cannot alter").

The input-mutation check used to compare fingerprints that the worker computed before and after each
call. Everything in the worker is the candidate's to rewrite: a kernel that writes into an input and
then swaps the worker's fingerprint function (and the sentinel's record of it) for one that remembers
the first answer passed. On a host the parent now draws the inputs itself, writes each tensor's whole
storage into a file of its own in the worker's scratch directory and keeps the file open; the worker
maps the files (shared) and calls the kernel on tensors over those mappings, with the very strides and
offsets the parent drew. After the worker's reply the parent reads the bytes back through its own file
descriptors (never a mapping: a file the worker truncated would make a mapping fault) and fingerprints
them. A write into an input lands in the file; a truncated or replaced file reads short or unchanged.

Not covered: a worker whose harness code is rewritten to call the kernel on private copies (the kernel's
outputs are still judged by the parent), and GPU inputs, which live in the worker's device memory (the
worker's own fingerprints stay the check there).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import torch

from .runner import digest


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"not a dtype: {name!r}")
    return dtype


def _storage_bytes(t: torch.Tensor) -> bytes:
    return torch.empty(0, dtype=torch.uint8).set_(t.untyped_storage()).numpy().tobytes()


def _over(storage: torch.UntypedStorage, desc: dict[str, Any]) -> torch.Tensor:
    """A tensor with the described dtype, offset, shape and strides over `storage`."""
    return torch.empty(0, dtype=_dtype(desc["dtype"])).set_(
        storage, int(desc["offset"]), tuple(desc["shape"]), tuple(desc["stride"])
    )


class Placed:
    """One call's inputs in files of the parent's: the descriptors the worker rebuilds them from, and
    the parent's open descriptors to read them back after the call."""

    def __init__(self, values: list[Any], directory: Path, tag: str) -> None:
        self.descs: list[dict[str, Any]] = []
        self.fds: list[int | None] = []
        for j, v in enumerate(values):
            if not isinstance(v, torch.Tensor) or v.device.type != "cpu":
                self.descs.append({"value": v})
                self.fds.append(None)
                continue
            desc = {
                "dtype": str(v.dtype),
                "offset": v.storage_offset(),
                "shape": list(v.shape),
                "stride": list(v.stride()),
                "nbytes": v.untyped_storage().nbytes(),
            }
            if desc["nbytes"] == 0:  # nothing to change: an empty tensor of the same layout
                self.descs.append({**desc, "empty": True})
                self.fds.append(None)
                continue
            path = directory / f"{tag}_{j}.bin"
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            data = memoryview(_storage_bytes(v))
            while data:
                data = data[os.write(fd, data) :]
            self.descs.append({**desc, "file": str(path)})
            self.fds.append(fd)

    def read_back(self) -> list[Any] | None:
        """The inputs as they are now, read through the parent's own descriptors; None when a file no
        longer holds all its bytes (truncated by the worker)."""
        out: list[Any] = []
        for desc, fd in zip(self.descs, self.fds, strict=True):
            if fd is None:
                out.append(desc["value"] if "value" in desc else _over(torch.UntypedStorage(0), desc))
                continue
            data = os.pread(fd, desc["nbytes"], 0)
            if len(data) != desc["nbytes"]:
                return None
            storage = torch.frombuffer(bytearray(data), dtype=torch.uint8).untyped_storage()
            out.append(_over(storage, desc))
        return out

    def close(self) -> None:
        for desc, fd in zip(self.descs, self.fds, strict=True):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(desc["file"])
        self.fds = [None] * len(self.fds)


def open_inputs(descs: list[dict[str, Any]]) -> list[Any]:
    """Worker side: the inputs over shared mappings of the parent's files (writes reach the files)."""
    values: list[Any] = []
    for desc in descs:
        if "value" in desc:
            values.append(desc["value"])
        elif desc.get("empty"):
            values.append(_over(torch.UntypedStorage(0), desc))
        else:
            base = torch.from_file(desc["file"], shared=True, size=int(desc["nbytes"]), dtype=torch.uint8)
            values.append(_over(base.untyped_storage(), desc))
    return values


def place_seeds(reference: Any, idx: int, seeds: list[list[Any]], directory: Path, tag: str) -> list[Placed]:
    """Every correctness seed's inputs of workload `idx`, drawn by the parent's reference and placed."""
    return [
        Placed(
            reference.inputs(idx, int(seed), float(scale), None if mix is None else int(mix)),
            directory,
            f"{tag}_{n}",
        )
        for n, (seed, scale, mix) in enumerate(seeds)
    ]


def read_back_digests(placed: list[Placed]) -> list[list[float] | None]:
    """Per seed: the fingerprint of its inputs as the parent reads them back now (None: truncated)."""
    out: list[list[float] | None] = []
    for p in placed:
        values = p.read_back()
        out.append(None if values is None else digest(values))
    return out
