"""Framed messages between the trusted parent and the untrusted worker over dedicated pipes.

Each frame is an 8-byte length and a `torch.save` payload; the receiver always loads with
`weights_only=True`, so a message from the candidate's process can carry tensors and plain data but
can never execute code in the parent.
"""

from __future__ import annotations

import io
import os
import select
import struct
import time
from typing import Any

import torch


class ChannelClosed(EOFError):
    """The other side exited (crash, os._exit, kill)."""


class ChannelTimeout(TimeoutError):
    """No reply within the watchdog deadline."""


class Channel:
    def __init__(self, rfd: int, wfd: int, map_location: str | None = None) -> None:
        self.rfd, self.wfd, self.map_location = rfd, wfd, map_location

    def send(self, obj: Any) -> None:
        buf = io.BytesIO()
        torch.save(obj, buf)
        data = buf.getbuffer()
        view = memoryview(struct.pack("<Q", len(data)) + bytes(data))
        while view:
            n = os.write(self.wfd, view)
            view = view[n:]

    def _read(self, n: int, deadline: float | None) -> bytearray:
        out = bytearray()
        while len(out) < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.rfd], [], [], left)[0]:
                    raise ChannelTimeout("no reply before the deadline")
            chunk = os.read(self.rfd, min(n - len(out), 1 << 24))
            if not chunk:
                raise ChannelClosed("the other process closed the channel")
            out += chunk
        return out

    def recv(self, timeout_s: float | None = None) -> Any:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        (n,) = struct.unpack("<Q", self._read(8, deadline))
        payload = self._read(n, deadline)
        return torch.load(io.BytesIO(payload), weights_only=True, map_location=self.map_location)
