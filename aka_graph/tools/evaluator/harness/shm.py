"""A shared-memory region for output bytes from the worker to the trusted parent (issue 9, Speed).

Outputs can be gigabytes; through a pipe every byte is copied into the kernel and out again, in 1 MiB
steps, while the worker waits for the parent to read. Instead the parent creates an anonymous memory
file (memfd), gives it its final size and seals it against shrinking and growing before the worker is
spawned with it: the worker writes tensors' raw bytes into it and sends only a header (offset, shape,
dtype) through the pipe. The seals matter: a file that the worker could truncate would make the parent's
mapping fault (SIGBUS) when it reads; a sealed one can only hold wrong bytes, which the parent judges
like any other wrong output. The parent checks every offset and size against the region before it reads
and copies the bytes out at once (it never keeps a view the worker could still change).

Standard library only: `worker_proc` creates the region before the parent imports torch.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os

MAX_CAPACITY = 64 << 30  # virtual size: pages cost memory only once written
ALIGN = 64


def capacity(host_bytes: int) -> int:
    """The region's size: a quarter of the host's memory, at most 64 GiB. Larger replies (or what does not
    fit) go through the pipe as before; the worker's host-memory limit (RLIMIT_DATA) does not cover a
    shared mapping, so the region must not be a second budget as large as that limit."""
    return max(0, min(MAX_CAPACITY, host_bytes // 4)) // ALIGN * ALIGN


def create(size: int) -> int | None:
    """A sealed memfd of `size` bytes (inheritable by pass_fds), or None where the kernel lacks memfd or
    sealing: the pipe carries everything then."""
    if size <= 0 or not hasattr(os, "memfd_create") or not hasattr(fcntl, "F_ADD_SEALS"):
        return None
    try:
        fd = os.memfd_create("aka_outputs", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except OSError:
        return None
    try:
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    except OSError:
        os.close(fd)
        return None
    return fd


def sealed(fd: int) -> bool:
    """Whether `fd` can neither shrink nor grow (the only regions the parent maps)."""
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except (OSError, AttributeError):
        return False
    need = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
    return seals & need == need


class Region:
    """One process's mapping of the region (read-write: the parent's is its own memory too)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = os.fstat(fd).st_size
        self.map: mmap.mmap | None = mmap.mmap(fd, self.size) if self.size else None

    def holds(self, offset: object, nbytes: int) -> bool:
        """Whether [offset, offset + nbytes) lies inside the region (offset from the other process)."""
        return type(offset) is int and offset >= 0 and nbytes >= 0 and offset + nbytes <= self.size

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
