"""Framed messages between the trusted parent and the untrusted worker over dedicated pipes.

A frame is an 8-byte length, a `torch.save` header, then the raw bytes of every tensor the message
holds that is not in the shared region (outputs can be gigabytes: raw bytes avoid serialising them twice).
With a shared region (shm.py) the worker writes tensors' bytes there and the header says where ("at"):
no pipe copy, and the worker need not wait for the parent to read. The receiver loads the header with
`weights_only=True`, rebuilds tensors only from an allowlist of dtypes and checks every region offset and
size against the region, so a message from the candidate's process carries data but can never execute
code in the parent or make it read outside what it mapped.

On a GPU, once the worker showed at start-up that the parent can map its allocations (`offer_probe`,
`accept_probe`), a large device tensor crosses on the device (device_share.py): the header says which
allocation and where ("shared"), the parent copies it into memory of its own and unmaps it.
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

from . import device_share
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
        # device sharing: the parent offers it in every request once the worker's probe mapped
        # (accept_probe); the worker shares while the last request offered it, and keeps what it shared
        # alive until the next request (the parent has copied it by then)
        self.offer_share = False
        self.share_device = False
        self.shared_kept: list[torch.Tensor] = []
        self.shared_bytes = 0  # bytes that crossed on the device (sent or received): reported, tested
        self._mapped: device_share.Mapped | None = None
        enlarge(wfd)

    @property
    def on_gpu(self) -> bool:
        """Whether received tensors land on the device (the parent on a GPU)."""
        return self.map_location is not None and self.map_location.startswith("cuda")

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
            if self._shared(t, meta, n):
                continue
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

    def _shared(self, t: torch.Tensor, meta: dict[str, Any], nbytes: int) -> bool:
        """Whether device tensor `t` crossed on the device (its handle in `meta`); False where it goes
        through the region: sharing not offered, a small tensor, or the driver refused."""
        if not self.share_device or t.device.type != "cuda" or nbytes < device_share.MIN_SHARED_BYTES:
            return False
        try:
            meta["shared"] = device_share.share(t)
        except device_share.ShareError:
            return False
        self.shared_kept.append(t)
        self.shared_bytes += nbytes
        return True

    def send(self, obj: Any) -> None:
        if isinstance(obj, dict) and "cmd" in obj:  # a request: whether the reply may share device memory
            obj = {**obj, "share": self.offer_share}
        tensors: list[torch.Tensor] = []
        stripped = _strip(obj, tensors)
        if self.share_device and any(t.device.type == "cuda" for t in tensors):
            torch.cuda.synchronize()  # what the parent maps is written before it reads
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
        on_gpu = self.on_gpu
        expand = _expansion(meta, shape)
        if "shared" in meta:  # on the device: mapped, copied into the parent's own memory
            return self._from_device(meta["shared"], nbytes, on_gpu).view(dtype).reshape(shape).expand(expand)
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

    def _from_device(self, shared: Any, nbytes: int, on_gpu: bool) -> torch.Tensor:
        """The bytes the worker shared on the device, as a tensor of the parent's own (device_share.py)."""
        if not on_gpu or self._mapped is None or not isinstance(shared, dict) or nbytes == 0:
            raise ProtocolError("a device-shared tensor where none may be")
        with span("transfer.device_share"):
            try:
                own = self._mapped.copy(shared.get("handle"), shared.get("offset"), nbytes)
            except (ValueError, device_share.ShareError) as exc:
                raise ProtocolError(f"device-shared tensor: {exc}") from exc
        self.shared_bytes += nbytes
        return own

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
        self.shared_kept.clear()  # a new request: the parent copied what the last reply shared
        (n,) = struct.unpack("<Q", head)
        if n > 1 << 30:
            raise ProtocolError(f"header of {n} bytes")
        payload = bytearray(n)
        self._read_into(memoryview(payload), deadline)
        header = torch.load(io.BytesIO(payload), weights_only=True)
        if isinstance(header, dict) and "cmd" in header:
            self.share_device = header.get("share") is True
        self._mapped = device_share.Mapped(self.map_location) if self.on_gpu and self.offer_share else None
        try:
            return self._rebuild(header, deadline, [0])
        finally:
            if self._mapped is not None:
                self._mapped.close()
            self._mapped = None

    def offer_probe(self) -> dict[str, Any] | None:
        """The worker's side of the start-up check: a device tensor of a known pattern, shared (kept alive
        until the next request), as plain fields of the ready message; None where it cannot share."""
        if not torch.cuda.is_available():
            return None
        probe = probe_pattern(device_share.MIN_SHARED_BYTES, "cuda")
        try:
            shared = device_share.share(probe)
        except device_share.ShareError:
            return None
        self.shared_kept.append(probe)
        return {**shared, "nbytes": probe.numel()}

    def accept_probe(self, probe: Any) -> str:
        """The parent's side: maps the worker's probe and compares it with the pattern; on success, large
        device tensors cross on the device from the next request on. Returns why not ("" when offered)."""
        if not self.on_gpu or not isinstance(probe, dict) or not device_share.available():
            return "no device-shared probe"
        nbytes = probe.get("nbytes")
        if type(nbytes) is not int or nbytes != device_share.MIN_SHARED_BYTES:
            return "a probe of another size"
        mapped = device_share.Mapped(self.map_location)
        try:
            got = mapped.copy(probe.get("handle"), probe.get("offset"), nbytes)
            same = bool(torch.equal(got, probe_pattern(nbytes, self.map_location)))
        except Exception as exc:  # whatever refused (the driver, torch's interface): the region stays
            return f"the worker's allocation could not be mapped: {type(exc).__name__}: {exc}"[:300]
        finally:
            with contextlib.suppress(RuntimeError):
                mapped.close()
        if not same:
            return "the mapped probe differs from the pattern"
        self.offer_share = True
        return ""


def probe_pattern(nbytes: int, device: str) -> torch.Tensor:
    """The start-up probe's bytes: a pattern neither zeros nor a fill, so a wrong mapping shows."""
    return (torch.arange(nbytes, device=device, dtype=torch.int32) % 251).to(torch.uint8)
