"""Outputs come back from the worker through a sealed shared region, not the pipe (issue 9, Speed), and
the region can neither crash the parent nor let it read outside what it mapped: every offset and size in a
header is checked, the worker cannot shrink or grow the region, and what the parent judges is its own
copy, never a view that the worker could still change."""

from __future__ import annotations

import io
import os
import struct
import threading
from collections.abc import Iterator

import pytest
import torch

from aka_graph.tools.evaluator.harness import shm
from aka_graph.tools.evaluator.harness.protocol import PIN_STEP, Channel, PinnedPrefix, ProtocolError

SIZE = 1 << 20


@pytest.fixture
def region_fd() -> Iterator[int]:
    fd = shm.create(SIZE)
    if fd is None:
        pytest.skip("this kernel has no sealable memfd")
    yield fd
    os.close(fd)


def pair(fd: int | None) -> tuple[Channel, Channel]:
    """(worker end, parent end) over real pipes, both mapping the region `fd` when given."""
    w2p_r, w2p_w = os.pipe()
    p2w_r, p2w_w = os.pipe()
    region = (lambda: shm.Region(os.dup(fd))) if fd is not None else (lambda: None)
    return Channel(p2w_r, w2p_w, region=region()), Channel(w2p_r, p2w_w, region=region())


def forged(chan_w: Channel, header: object) -> None:
    """A frame as a candidate could write it into the channel: any header at all."""
    buf = io.BytesIO()
    torch.save(header, buf)
    data = buf.getvalue()
    os.write(chan_w.wfd, struct.pack("<Q", len(data)) + data)


def test_outputs_travel_through_the_region_and_arrive_intact(region_fd: int) -> None:
    worker, parent = pair(region_fd)
    outs = [torch.randn(64, 33).to(torch.bfloat16), torch.arange(7, dtype=torch.int64), torch.tensor(True)]
    worker.send({"outputs": [outs, [1.5, None]], "digests": [3.0]})
    got = parent.recv(timeout_s=30)
    for g, w in zip(got["outputs"][0], outs, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape and torch.equal(g, w)
    assert got["outputs"][1] == [1.5, None] and got["digests"] == [3.0]
    expected = sum(t.numel() * t.element_size() for t in outs)
    assert worker.bulk_bytes == expected == parent.bulk_bytes


@pytest.mark.parametrize("through_region", [True, False], ids=["region", "pipe"])
def test_complex_outputs_and_conjugate_or_negative_views_arrive_as_their_values(
    region_fd: int, through_region: bool
) -> None:
    """A native Model may return complex tensors (torch.fft); a conjugate or negative view shares its
    base's bits with a flag, so the bytes sent must be the resolved values, not the base's."""
    worker, parent = pair(region_fd if through_region else None)
    z = torch.complex(torch.randn(8, 5), torch.randn(8, 5))
    outs = [z, z.conj(), z.to(torch.complex128), z.conj().imag]
    worker.send({"outputs": outs})
    got = parent.recv(timeout_s=30)["outputs"]
    for g, w in zip(got, outs, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape and torch.equal(g, w.resolve_conj().resolve_neg())
        assert not g.is_conj() and not g.is_neg()


@pytest.mark.parametrize("through_region", [True, False], ids=["region", "pipe"])
def test_an_expanded_output_travels_as_its_base_and_arrives_expanded(
    region_fd: int, through_region: bool
) -> None:
    """Round 18 on the H200: a reference returned 17 GB stride-0 views of a few megabytes, and making them
    contiguous to send them ran the worker out of memory. The base goes; the parent expands it again."""
    worker, parent = pair(region_fd if through_region else None)
    base = torch.randn(2, 3, 1, 1)
    huge = base.expand(2, 3, 1 << 20, 1 << 12)  # 2**34 logical elements: 64 GiB if made contiguous
    worker.send({"outputs": [huge, base.expand(2, 3, 4, 5).contiguous()]})
    got = parent.recv(timeout_s=30)["outputs"]
    assert got[0].shape == huge.shape and got[0].stride()[2:] == (0, 0)
    assert torch.equal(got[0][:, :, :1, :1], base) and torch.equal(got[0][:, :, -1, -1], base[:, :, 0, 0])
    if through_region:  # (the pipe's bytes are not counted)
        assert worker.bulk_bytes == base.nbytes + 2 * 3 * 4 * 5 * 4  # the base, then the contiguous one whole


@pytest.mark.parametrize(
    "expand",
    [[2, 3], [2, 3, 4, 5, 6], [2, 4, 4, 5], [2, 3, -1, 5], "2,3,4,5", [2.0, 3, 4, 5]],
    ids=["fewer-dims", "more-dims", "not-a-size-1-dim", "negative", "string", "float"],
)
def test_a_forged_expansion_is_a_protocol_error(region_fd: int, expand: object) -> None:
    worker, parent = pair(region_fd)
    forged(
        worker,
        {"o": [{"__tensor__": 0, "shape": [2, 3, 1, 1], "dtype": "float32", "at": 0, "expand": expand}]},
    )
    with pytest.raises(ProtocolError, match="bad expansion"):
        parent.recv(timeout_s=30)


def test_without_a_region_the_pipe_still_carries_everything() -> None:
    worker, parent = pair(None)
    t = torch.randn(300, 300)
    worker.send({"outputs": [t]})
    assert torch.equal(parent.recv(timeout_s=30)["outputs"][0], t)
    assert worker.bulk_bytes == 0 == parent.bulk_bytes


def test_what_does_not_fit_goes_through_the_pipe(region_fd: int) -> None:
    worker, parent = pair(region_fd)
    small, big = torch.ones(1000), torch.randn(SIZE // 4 + 1)  # big: 1 MiB + 4 bytes, over the region
    sender = threading.Thread(target=worker.send, args=({"outputs": [small, big, small * 2]},))
    sender.start()  # more than a pipe holds: the worker's process writes while the parent reads
    got = parent.recv(timeout_s=60)["outputs"]
    sender.join(timeout=60)
    assert torch.equal(got[0], small) and torch.equal(got[1], big) and torch.equal(got[2], small * 2)
    assert parent.bulk_bytes == 2 * small.numel() * 4


def test_the_parent_judges_a_copy_that_later_writes_to_the_region_cannot_change(region_fd: int) -> None:
    worker, parent = pair(region_fd)
    worker.send({"outputs": [torch.zeros(256)]})
    got = parent.recv(timeout_s=30)["outputs"][0]
    assert worker.region is not None and worker.region.map is not None
    worker.region.map[:1024] = b"\xff" * 1024  # the candidate's process rewrites the region afterwards
    assert torch.equal(got, torch.zeros(256))


@pytest.mark.parametrize(
    "at",
    [SIZE - 8, SIZE, -64, 1 << 62, "0", 0.0, True],
    ids=["past-the-end", "at-the-end", "negative", "huge", "string", "float", "bool"],
)
def test_a_forged_offset_outside_the_region_is_a_protocol_error(region_fd: int, at: object) -> None:
    worker, parent = pair(region_fd)
    forged(worker, {"outputs": [{"__tensor__": 0, "shape": [4], "dtype": "float32", "at": at}]})
    with pytest.raises(ProtocolError, match="outside the shared region"):
        parent.recv(timeout_s=30)


def test_a_forged_shape_too_large_for_the_region_is_a_protocol_error(region_fd: int) -> None:
    worker, parent = pair(region_fd)
    forged(worker, {"o": [{"__tensor__": 0, "shape": [1 << 40, 1 << 40], "dtype": "float64", "at": 0}]})
    with pytest.raises(ProtocolError, match="outside the shared region"):
        parent.recv(timeout_s=30)


def test_a_region_offset_without_a_region_is_a_protocol_error() -> None:
    worker, parent = pair(None)
    forged(worker, {"o": [{"__tensor__": 0, "shape": [4], "dtype": "float32", "at": 0}]})
    with pytest.raises(ProtocolError):
        parent.recv(timeout_s=30)


def test_a_dtype_off_the_allowlist_is_refused_in_the_region_too(region_fd: int) -> None:
    worker, parent = pair(region_fd)
    forged(worker, {"o": [{"__tensor__": 0, "shape": [4], "dtype": "qint8", "at": 0}]})
    with pytest.raises(ProtocolError, match="bad tensor header"):
        parent.recv(timeout_s=30)


def test_the_worker_can_neither_shrink_nor_grow_nor_unseal_the_region(region_fd: int) -> None:
    assert shm.sealed(region_fd)
    mine = os.dup(region_fd)  # what the worker holds: the same open file
    with pytest.raises(PermissionError):
        os.ftruncate(mine, 0)  # would make the parent's mapping fault (SIGBUS) on its next read
    with pytest.raises(PermissionError):
        os.ftruncate(mine, SIZE * 2)
    import fcntl

    with pytest.raises(PermissionError):
        fcntl.fcntl(mine, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE)  # F_SEAL_SEAL: no more seals either
    os.close(mine)
    assert os.fstat(region_fd).st_size == SIZE


def test_an_unsealed_file_is_not_used_as_a_region() -> None:
    fd = os.memfd_create("plain")
    try:
        os.ftruncate(fd, SIZE)
        assert not shm.sealed(fd)
    finally:
        os.close(fd)


def test_the_region_is_a_bounded_share_of_host_memory() -> None:
    assert shm.capacity(16 << 30) == 4 << 30
    assert shm.capacity(2 << 40) == shm.MAX_CAPACITY
    assert shm.capacity(0) == 0 and shm.create(0) is None


class FakeCudart:
    """cudaHostRegister / cudaHostUnregister recorded (this host has no CUDA); `refuse`: every
    registration fails as a driver that will not lock the pages would."""

    def __init__(self, refuse: bool = False) -> None:
        self.registered: list[tuple[int, int]] = []
        self.unregistered: list[int] = []
        self.refuse = refuse

    def cudaHostRegister(self, ptr: int, size: int, flags: int) -> int:
        if self.refuse:
            return 2  # cudaErrorMemoryAllocation
        self.registered.append((ptr, size))
        return 0

    def cudaHostUnregister(self, ptr: int) -> int:
        self.unregistered.append(ptr)
        return 0


def _pinned_region(monkeypatch: pytest.MonkeyPatch, cudart: FakeCudart) -> tuple[PinnedPrefix, int]:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "cudart", lambda: cudart)
    fd = shm.create(3 * PIN_STEP + 4096)
    assert fd is not None
    region = shm.Region(fd)
    base = torch.frombuffer(region.map, dtype=torch.uint8, count=1).data_ptr()
    return PinnedPrefix(region), base


def test_the_region_is_page_locked_as_one_range_from_its_start_growing_and_unlocked_on_release(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One range, always from the region's start: a copy may not span two registrations (the H200
    refused a tensor crossing the boundary of two with "invalid argument")."""
    cudart = FakeCudart()
    pinned, base = _pinned_region(monkeypatch, cudart)
    pinned.cover(100)
    pinned.cover(PIN_STEP)  # already covered: no second registration
    assert cudart.registered == [(base, PIN_STEP)]
    pinned.cover(PIN_STEP + 1)  # grows: the old range is unregistered, the whole prefix registered again
    assert cudart.unregistered == [base] and cudart.registered[1] == (base, 2 * PIN_STEP)
    pinned.cover(10 * PIN_STEP)  # never past the region's end
    assert cudart.registered[2] == (base, 3 * PIN_STEP + 4096)
    assert all(start == base for start, _ in cudart.registered)
    pinned.release()
    assert cudart.unregistered == [base, base, base]
    pinned.cover(100)  # released for good: the mapping is about to go
    assert len(cudart.registered) == 3


def test_a_refused_registration_leaves_the_region_pageable_and_is_not_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cudart = FakeCudart(refuse=True)
    pinned, _ = _pinned_region(monkeypatch, cudart)
    pinned.cover(100)
    cudart.refuse = False
    pinned.cover(2 * PIN_STEP)
    assert cudart.registered == [] and pinned.failed
    pinned.release()
    assert cudart.unregistered == []
