"""Outputs handed from the worker to the parent on the device itself (CUDA IPC), not through host memory.

Issue 9 (Speed): large outputs crossed as device -> shared host region -> device, at a few GB/s: the
returned KV caches of a fused RoPE problem spent 28 s in transfer on the H200 (round 18), and an MoE
backward's 24 GiB of weight gradients per seed could not be evaluated within its time. With CUDA IPC the
worker names the device allocation holding a tensor (a handle from the driver), the parent maps it, copies
the bytes into memory of its own (device to device, at the memory's rate) and unmaps it before judging:
nothing judged is the worker's memory, as with the region (protocol._from_region).

The driver API through ctypes (the standard library), not torch's own sharing: torch's keeps a reference
count in a shared file that only a receiving torch storage gives back, and a parent that copies and lets
go would leave every shared block of the worker in limbo. Whatever the worker says about a handle is
checked against what the driver says the mapping holds (`Mapped.view`): a forged offset or size is a
ProtocolError, never a read outside the mapping. Where the driver refuses (another namespace, an
allocator of expandable segments, no driver) the tensor goes through the region, as before."""

from __future__ import annotations

import ctypes
import functools
from typing import Any

import torch

from .memory import host_copy
from .spans import span

HANDLE_BYTES = 64  # sizeof(CUipcMemHandle)
LAZY_PEER_ACCESS = 1  # CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
MIN_SHARED_BYTES = 8 << 20  # smaller tensors cost less through the region than a mapping does
# a shared tensor is copied into host memory instead where the device would have less than this left: 025
# MoE backward's worker held 121 GiB of the H200 when the parent copied its 8 GiB gradients (round 26)
ROOM_BYTES = 2 << 30


class ShareError(RuntimeError):
    """The driver refused a sharing step (the tensor then goes through the region)."""


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * HANDLE_BYTES)]


@functools.cache
def _driver() -> Any:
    """libcuda, with the entry points used here typed; None where there is no driver."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    ptr, size = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t)
    lib.cuMemGetAddressRange_v2.argtypes = [ptr, size, ctypes.c_uint64]
    lib.cuIpcGetMemHandle.argtypes = [ctypes.POINTER(_Handle), ctypes.c_uint64]
    lib.open_handle = getattr(lib, "cuIpcOpenMemHandle_v2", None) or lib.cuIpcOpenMemHandle
    lib.open_handle.argtypes = [ptr, _Handle, ctypes.c_uint]
    lib.cuIpcCloseMemHandle.argtypes = [ctypes.c_uint64]
    return lib


def _check(code: int, what: str) -> None:
    if code != 0:
        raise ShareError(f"{what} failed (CUresult {code})")


def _range(lib: Any, address: int) -> tuple[int, int]:
    """(base, size) of the device allocation holding `address`, as the driver knows it."""
    base, size = ctypes.c_uint64(0), ctypes.c_size_t(0)
    _check(
        lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), address), "cuMemGetAddressRange"
    )
    return base.value, size.value


def available() -> bool:
    return _driver() is not None and torch.cuda.is_available()


def share(t: torch.Tensor) -> dict[str, Any]:
    """The worker's side: a handle to the allocation holding contiguous device tensor `t`, and where in it
    `t`'s bytes lie. The caller keeps `t` alive until the parent has copied it (its next request)."""
    lib = _driver()
    if lib is None or t.device.type != "cuda" or not t.is_contiguous():
        raise ShareError("not a contiguous device tensor on a host with a CUDA driver")
    address = t.data_ptr()
    base, _ = _range(lib, address)
    handle = _Handle()
    _check(lib.cuIpcGetMemHandle(ctypes.byref(handle), base), "cuIpcGetMemHandle")
    return {"handle": handle_bytes(handle), "offset": address - base}


def handle_bytes(handle: _Handle) -> bytes:
    """The handle's 64 bytes as they are: its char array read as a field stops at the first NUL (the
    H200's driver answered CUresult 1 to the handles that cut)."""
    return bytes(memoryview(handle).cast("B"))


def handle_of(raw: bytes) -> _Handle:
    return _Handle.from_buffer_copy(raw)


class _DeviceBytes:
    """`nbytes` at device address `address`, as torch.as_tensor reads them (__cuda_array_interface__)."""

    def __init__(self, address: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (address, False),
            "version": 2,
        }


class Mapped:
    """The parent's side: the worker's allocations mapped for the span of one reply (each handle once: the
    driver maps an allocation only once per context), then unmapped together (`close`)."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.bases: dict[bytes, tuple[int, int]] = {}  # handle -> (base, size) of the mapping

    def copy(self, handle: Any, offset: Any, nbytes: int) -> torch.Tensor:
        """A device tensor of the parent's own holding `nbytes` at `offset` into the handle's allocation.
        Raises ValueError where the worker's figures fall outside what the driver mapped."""
        if not isinstance(handle, bytes) or len(handle) != HANDLE_BYTES:
            raise ValueError("a shared tensor's handle is not a CUDA IPC handle")
        if type(offset) is not int or offset < 0 or nbytes <= 0:
            raise ValueError(f"a shared tensor at offset {offset!r} of {nbytes} bytes")
        lib = _driver()
        if lib is None:
            raise ShareError("no CUDA driver in this process")
        if handle not in self.bases:
            address = ctypes.c_uint64(0)
            raw = handle_of(handle)
            # the primary context current on this thread: the runtime binds it on a synchronization, and
            # a parent that has not yet run anything on the device has none (CUresult 201 on the H200)
            torch.cuda.synchronize(self.device)
            _check(lib.open_handle(ctypes.byref(address), raw, LAZY_PEER_ACCESS), "cuIpcOpenMemHandle")
            self.bases[handle] = _range(lib, address.value)
        base, size = self.bases[handle]
        if offset + nbytes > size:
            raise ValueError(
                f"a shared tensor of {nbytes} bytes at {offset} runs past its {size}-byte allocation"
            )
        view = torch.as_tensor(_DeviceBytes(base + offset, nbytes), device=self.device)
        free, _ = torch.cuda.mem_get_info(self.device)
        if free < nbytes + ROOM_BYTES:  # the worker holds most of the device: into host memory, judged
            with span("transfer.device_share_to_host"):  # on the device a piece at a time (numerics)
                return host_copy(view)
        own = view.clone()  # device to device; ordered before the unmapping by the synchronize in close
        return own

    def close(self) -> None:
        if not self.bases:
            return
        torch.cuda.synchronize()  # every copy out of the mappings done
        lib = _driver()
        for base, _ in self.bases.values():
            lib.cuIpcCloseMemHandle(base)
        self.bases.clear()
