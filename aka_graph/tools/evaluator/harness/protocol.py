"""Framed messages between the trusted parent and the untrusted worker over dedicated pipes.

A frame is an 8-byte length, a `torch.save` header, then the raw bytes of every tensor the message
holds that is not in the shared region (outputs can be gigabytes: raw bytes avoid serialising them twice).
With a shared region (shm.py) the worker writes tensors' bytes there and the header says where ("at"):
no pipe copy, and the worker need not wait for the parent to read. The receiver loads the header with
`weights_only=True`, rebuilds tensors only from an allowlist of dtypes and checks every region offset and
size against the region, so a message from the candidate's process carries data but can never execute
code in the parent or make it read outside what it mapped.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import io
import os
import select
import struct
import time
from typing import Any

import torch

from .layout import writable
from .shm import ALIGN, Region
from .spans import span

F_SETPIPE_SZ = 1031
_TAG = "__tensor__"
DTYPES = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.float64,
        torch.float8_e4m3fn,
        torch.float8_e5m2,
        torch.bool,
        torch.int8,
        torch.uint8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.complex64,  # no SOL dtype names these, but a native Model may return them (torch.fft)
        torch.complex128,
        *([torch.float4_e2m1fn_x2] if hasattr(torch, "float4_e2m1fn_x2") else []),
    )
}


class ChannelClosed(EOFError):
    """The other side exited (crash, os._exit, kill)."""


class ChannelTimeout(TimeoutError):
    """No reply within the watchdog deadline."""


class ProtocolError(ValueError):
    """A malformed frame (a bug, or a candidate writing into the channel)."""


def enlarge(fd: int, size: int = 1 << 20) -> None:
    with contextlib.suppress(OSError):  # pipe-max-size may be lower: the default only costs speed
        fcntl.fcntl(fd, F_SETPIPE_SZ, size)


def _bytes_view(t: torch.Tensor) -> memoryview:
    n = t.numel() * t.element_size()
    if n == 0:
        return memoryview(b"")
    return memoryview((ctypes.c_char * n).from_address(t.data_ptr())).cast("B")


def _strip(obj: Any, tensors: list[torch.Tensor]) -> Any:
    if isinstance(obj, torch.Tensor):
        # a conjugate or negative view's bits are its base's: resolve the flag so the bytes are the values
        resolved = obj.detach().resolve_conj().resolve_neg()
        base = writable(resolved)  # an expanded tensor goes as its base (layout.py), expanded on arrival
        tensors.append(base.contiguous())  # device: the pinned stage
        dtype = str(obj.dtype).removeprefix("torch.")
        meta: dict[str, Any] = {_TAG: len(tensors) - 1, "shape": list(base.shape), "dtype": dtype}
        if base is not resolved:
            meta["expand"] = list(resolved.shape)
        return meta
    if isinstance(obj, dict):
        return {k: _strip(v, tensors) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_strip(v, tensors) for v in obj]
    return obj


def _expansion(meta: dict[str, Any], shape: list[int]) -> list[int]:
    """The logical shape of a tensor sent as its compact base (`_strip`): the base's own shape unless the
    header says "expand", which may only repeat the base's size-1 dimensions."""
    full = meta.get("expand", shape)
    if (
        not isinstance(full, list)
        or len(full) != len(shape)
        or not all(isinstance(d, int) and d >= 0 for d in full)
        or any(s != 1 and s != d for s, d in zip(shape, full, strict=True))
    ):
        raise ProtocolError(f"bad expansion {full!r} of a tensor of shape {shape!r}")
    return full


def nbytes_of(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _metas(obj: Any) -> list[dict[str, Any]]:
    """The tensor placeholders of a stripped message, in tensor order."""
    found: list[dict[str, Any]] = []

    def walk(o: Any) -> None:
        if isinstance(o, dict) and _TAG in o:
            found.append(o)
        elif isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(obj)
    found.sort(key=lambda m: m[_TAG])
    return found


PIN_STEP = 64 << 20  # the region is page-locked in steps of this many bytes, as far as replies reach


class PinnedPrefix:
    """The first bytes of this process's mapping of the shared region, registered with CUDA as
    page-locked memory (cudaHostRegister) as far as the replies have reached (issue 9, Speed).

    Copies between the device and pageable memory go through the driver's own staging buffer, at a
    fraction of the bus's rate: 2 GB of rmsnorm's outputs took ~0.4 s to write in the worker and ~0.3 s to
    read in the parent on the H200. Registered, the same copies run at the bus's rate. Only what replies
    use is registered (the region is a quarter of the host's memory, mostly never touched), always as ONE
    range from the region's start: a copy may not span two registrations (the H200 answered "invalid
    argument" for a tensor crossing the boundary of two), so growing re-registers the whole prefix, at
    least doubling it. A registration or a copy that fails leaves the region pageable for good, as
    before. `release` unregisters before the mapping goes away: a long-lived parent (serve.py) maps one
    region per worker and must not leave their pages locked."""

    def __init__(self, region: Region | None) -> None:
        self.region, self.upto, self.failed = region, 0, False
        self.start: int | None = None  # the registered range's address (it begins at the region's start)

    def cover(self, end: int) -> None:
        region = self.region
        if self.failed or end <= self.upto or region is None or region.map is None:
            return
        if not torch.cuda.is_available():
            self.failed = True
            return
        new_end = min(region.size, -(-max(end, 2 * self.upto) // PIN_STEP) * PIN_STEP)
        base = torch.frombuffer(region.map, dtype=torch.uint8, count=1).data_ptr()
        self._unregister()
        try:
            err = torch.cuda.cudart().cudaHostRegister(base, new_end, 0)
        except (RuntimeError, AttributeError, TypeError):
            self.failed = True
            return
        if int(getattr(err, "value", err)) != 0:
            self.failed = True
            return
        self.start, self.upto = base, new_end

    def _unregister(self) -> None:
        if self.start is not None:
            with contextlib.suppress(RuntimeError, AttributeError, TypeError):
                torch.cuda.cudart().cudaHostUnregister(self.start)
        self.start, self.upto = None, 0

    def release(self) -> None:
        """Unregistered for good (a copy into it failed, or the mapping is about to go)."""
        self._unregister()
        self.failed = True


class Channel:
    def __init__(
        self, rfd: int, wfd: int, map_location: str | None = None, region: Region | None = None
    ) -> None:
        """`region`: the shared output region; the worker writes into it, the parent reads from it."""
        self.rfd, self.wfd, self.map_location, self.region = rfd, wfd, map_location, region
        self._stage: torch.Tensor | None = None  # one pinned buffer, reused for every device tensor
        self.bulk_bytes = 0  # bytes that went through the region (sent or received): reported, tested
        self.pinned = PinnedPrefix(region)  # registered with CUDA as device copies reach it
        enlarge(wfd)

    def stage(self, nbytes: int) -> torch.Tensor:
        """Pinned host bytes for device<->host copies (synchronous ones: reusable right after)."""
        if self._stage is None or self._stage.numel() < nbytes:
            size = max(nbytes, 1 << 20)
            self._stage = None
            self._stage = torch.empty(size, dtype=torch.uint8, pin_memory=True)
        return self._stage[:nbytes]

    def _write(self, view: memoryview) -> None:
        while view:
            n = os.write(self.wfd, view[: 1 << 20])
            view = view[n:]

    def _place(self, tensors: list[torch.Tensor], metas: list[dict[str, Any]]) -> list[torch.Tensor]:
        """Write what fits into the region (from offset 0: the previous reply has been consumed, as the
        parent sends its next request only then); return the tensors left for the pipe."""
        if self.region is None or self.region.map is None:
            return tensors
        left, at = [], 0
        for t, meta in zip(tensors, metas, strict=True):
            n = nbytes_of(t)
            if n == 0 or at + n > self.region.size:
                left.append(t)
                continue
            if t.device.type == "cuda":
                self.pinned.cover(at + n)
            dst = torch.frombuffer(self.region.map, dtype=torch.uint8, count=n, offset=at)
            src = t.reshape(-1).view(torch.uint8)
            try:
                dst.copy_(src)  # device -> host, synchronous
            except RuntimeError:  # refused into the registered range: pageable from now on, once more
                if self.pinned.start is None:
                    raise
                self.pinned.release()
                dst.copy_(src)
            meta["at"] = at
            self.bulk_bytes += n
            at += -(-n // ALIGN) * ALIGN
        return left

    def send(self, obj: Any) -> None:
        tensors: list[torch.Tensor] = []
        stripped = _strip(obj, tensors)
        left = tensors
        if tensors:
            with span("w.region_write"):  # the worker's outputs into the shared region
                left = self._place(tensors, _metas(stripped))
        buf = io.BytesIO()
        torch.save(stripped, buf)
        header = buf.getvalue()
        self._write(memoryview(struct.pack("<Q", len(header)) + header))
        for t in left:
            if t.device.type == "cuda":  # device -> pinned stage (synchronous copy), then the pipe
                n = t.numel() * t.element_size()
                staged = self.stage(n)
                if n:
                    staged.copy_(t.reshape(-1).view(torch.uint8))
                t = staged
            elif t.device.type != "cpu":
                t = t.cpu()
            self._write(_bytes_view(t))

    def _read_into(self, view: memoryview, deadline: float | None) -> None:
        got = 0
        while got < len(view):
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.rfd], [], [], left)[0]:
                    raise ChannelTimeout("no reply before the deadline")
            n = os.readv(self.rfd, [view[got : got + (1 << 22)]])
            if n == 0:
                raise ChannelClosed("the other process closed the channel")
            got += n

    def _tensor(self, meta: dict[str, Any], deadline: float | None) -> torch.Tensor:
        dtype = DTYPES.get(str(meta.get("dtype")))
        shape = meta.get("shape")
        if (
            dtype is None
            or not isinstance(shape, list)
            or not all(isinstance(d, int) and d >= 0 for d in shape)
        ):
            raise ProtocolError(f"bad tensor header {meta!r}")
        numel = 1
        for d in shape:
            numel *= d
        nbytes = numel * torch.empty(0, dtype=dtype).element_size()
        on_gpu = self.map_location is not None and self.map_location.startswith("cuda")
        expand = _expansion(meta, shape)
        if "at" in meta:  # in the shared region: bounds checked, then copied out at once
            return self._from_region(meta["at"], nbytes, on_gpu).view(dtype).reshape(shape).expand(expand)
        if on_gpu:  # pipe -> pinned stage -> a new device tensor (synchronous: the stage is free again)
            staged = self.stage(nbytes)
            self._read_into(_bytes_view(staged), deadline)
            # the bytes move, then are viewed as the dtype (some, like packed fp4, have no copy kernel)
            return staged.to(self.map_location, copy=True).view(dtype).reshape(shape).expand(expand)
        raw = torch.empty(nbytes, dtype=torch.uint8)
        self._read_into(_bytes_view(raw), deadline)
        return raw.view(dtype).reshape(shape).expand(expand)

    def _from_region(self, at: Any, nbytes: int, on_gpu: bool) -> torch.Tensor:
        """The bytes at `at` as a tensor of the parent's own (a copy: the worker can still write the
        region, so nothing judged may be a view of it)."""
        if self.region is None or self.region.map is None or nbytes == 0 or not self.region.holds(at, nbytes):
            raise ProtocolError(f"tensor of {nbytes} bytes at {at!r} is outside the shared region")
        src = torch.frombuffer(self.region.map, dtype=torch.uint8, count=nbytes, offset=at)
        self.bulk_bytes += nbytes
        with span("transfer.region_read"):
            if on_gpu:
                assert self.map_location is not None
                self.pinned.cover(at + nbytes)
                try:
                    return src.to(self.map_location, copy=True)
                except RuntimeError:  # as in _place: pageable from now on, once more
                    if self.pinned.start is None:
                        raise
                    self.pinned.release()
                    return src.to(self.map_location, copy=True)
            return src.clone()

    def _rebuild(self, obj: Any, deadline: float | None, count: list[int]) -> Any:
        if isinstance(obj, dict) and _TAG in obj:
            if obj[_TAG] != count[0]:
                raise ProtocolError("tensor frames out of order")
            count[0] += 1
            return self._tensor(obj, deadline)
        if isinstance(obj, dict):
            return {k: self._rebuild(v, deadline, count) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self._rebuild(v, deadline, count) for v in obj]
        return obj

    def recv(self, timeout_s: float | None = None) -> Any:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        head = bytearray(8)
        self._read_into(memoryview(head), deadline)
        (n,) = struct.unpack("<Q", head)
        if n > 1 << 30:
            raise ProtocolError(f"header of {n} bytes")
        payload = bytearray(n)
        self._read_into(memoryview(payload), deadline)
        header = torch.load(io.BytesIO(payload), weights_only=True)
        return self._rebuild(header, deadline, [0])
