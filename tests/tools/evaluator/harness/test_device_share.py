"""Large device outputs cross from the worker to the parent on the device (CUDA IPC, device_share.py),
only after the worker's start-up probe mapped and matched, and never on the worker's word alone: a
shared tensor the parent did not accept, or one whose offset or size runs past what the driver mapped, is
a ProtocolError. Here the refusals; the round trip between two processes on a GPU is
tests/gpu/test_device_share_gpu.py."""

from __future__ import annotations

import pytest
import torch

from aka_graph.tools.evaluator.harness import device_share
from aka_graph.tools.evaluator.harness.protocol import ProtocolError
from tests.tools.evaluator.harness.test_protocol_region import forged, pair


def test_a_request_says_whether_the_reply_may_share_device_memory() -> None:
    worker, parent = pair(None)
    parent.send({"cmd": "run"})
    assert worker.recv(timeout_s=10) == {"cmd": "run", "share": False} and not worker.share_device
    parent.offer_share = True
    parent.send({"cmd": "run"})
    assert worker.recv(timeout_s=10)["share"] is True and worker.share_device


def test_a_shared_tensor_the_parent_never_accepted_is_a_protocol_error() -> None:
    worker, parent = pair(None)
    parent.map_location = "cuda:0"  # even a parent on a GPU: sharing starts only with an accepted probe
    meta = {
        "__tensor__": 0,
        "dtype": "uint8",
        "shape": [1 << 23],
        "shared": {"handle": b"\0" * 64, "offset": 0},
    }
    forged(worker, {"outputs": [[meta]]})
    with pytest.raises(ProtocolError, match="device-shared tensor where none may be"):
        parent.recv(timeout_s=10)


@pytest.mark.parametrize(
    "probe",
    [
        None,
        {"handle": b"\0" * 64, "offset": 0, "nbytes": 1},
        "junk",
        {"nbytes": device_share.MIN_SHARED_BYTES},
    ],
)
def test_a_parent_refuses_a_probe_it_cannot_map_and_keeps_the_region(probe: object) -> None:
    _, parent = pair(None)
    parent.map_location = "cuda:0" if torch.cuda.is_available() else None
    assert parent.accept_probe(probe) != "" and not parent.offer_share


def test_a_worker_on_the_host_offers_no_probe_and_shares_nothing() -> None:
    if torch.cuda.is_available():
        pytest.skip("a host without a GPU")
    worker, _ = pair(None)
    assert worker.offer_probe() is None
    with pytest.raises(device_share.ShareError):
        device_share.share(torch.zeros(4))


def test_a_handle_keeps_all_its_bytes_nuls_included() -> None:
    """The H200's driver refused (CUresult 1) handles read through the struct's char array, which stops at
    the first NUL: a handle is 64 opaque bytes, and crosses whole."""
    raw = bytes([0, 7, 0, 0, 255, 1, 0, 3] * 8)
    assert device_share.handle_bytes(device_share.handle_of(raw)) == raw
    assert len(device_share.handle_bytes(device_share._Handle())) == device_share.HANDLE_BYTES
