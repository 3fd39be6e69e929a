"""Large device outputs cross from the worker to the parent on the device (CUDA IPC, device_share.py),
between two real processes (the driver maps no allocation into the process that made it): they arrive
intact as the parent's own copies, small ones still through the region, and a worker forging where its
tensor lies gets a ProtocolError, never a read past the mapping."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from aka_graph.tools.evaluator.harness import shm
from aka_graph.tools.evaluator.harness.protocol import Channel, ProtocolError

WORKER = textwrap.dedent(
    """
    import sys, torch
    from aka_graph.tools.evaluator.harness import device_share, shm
    from aka_graph.tools.evaluator.harness.protocol import Channel
    rfd, wfd, bulk, mode = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    chan = Channel(rfd, wfd, region=shm.Region(bulk))
    torch.cuda.init()
    chan.send({"ready": True, "share_probe": chan.offer_probe()})
    big = (torch.arange(48 << 20, device="cuda", dtype=torch.int64) % 97).to(torch.bfloat16).reshape(-1, 4096)
    small = torch.arange(10, device="cuda", dtype=torch.int32)
    if mode == "past_the_end":  # a candidate's worker forging where its tensor lies
        real = device_share.share
        def forged(t):
            found = real(t)
            return {**found, "offset": found["offset"] + (1 << 40)}
        device_share.share = forged
    while True:
        msg = chan.recv()
        if msg["cmd"] == "stop":
            break
        chan.send({"outputs": [[big, small]], "shared_bytes": chan.shared_bytes})
    """
)


def start_worker(mode: str) -> tuple[subprocess.Popen, Channel]:
    fd = shm.create(1 << 30)
    assert fd is not None
    w2p_r, w2p_w = os.pipe()
    p2w_r, p2w_w = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(p2w_r), str(w2p_w), str(fd), mode], pass_fds=(p2w_r, w2p_w, fd)
    )
    os.close(p2w_r)
    os.close(w2p_w)
    parent = Channel(w2p_r, p2w_w, map_location="cuda:0", region=shm.Region(fd))
    return proc, parent


@pytest.mark.gpu
def test_large_device_outputs_cross_on_the_device_and_arrive_as_the_parents_own_copies() -> None:
    proc, parent = start_worker("honest")
    try:
        ready = parent.recv(timeout_s=120)
        assert parent.accept_probe(ready["share_probe"]) == "" and parent.offer_share
        parent.send({"cmd": "run"})
        reply = parent.recv(timeout_s=120)
        big, small = reply["outputs"][0]
        assert big.device.type == "cuda" and big.shape == (12288, 4096) and big.dtype == torch.bfloat16
        want = (
            (torch.arange(48 << 20, device="cuda", dtype=torch.int64) % 97)
            .to(torch.bfloat16)
            .reshape(-1, 4096)
        )
        assert torch.equal(big, want) and torch.equal(small.cpu(), torch.arange(10, dtype=torch.int32))
        assert parent.shared_bytes == big.numel() * 2  # the small one went through the region
        assert parent.bulk_bytes == small.numel() * 4
        parent.send({"cmd": "run"})  # the worker may free or reuse it now: the parent's copy stays
        again = parent.recv(timeout_s=120)
        assert torch.equal(big, want) and torch.equal(again["outputs"][0][0], want)
        assert again["shared_bytes"] == big.numel() * 2  # the worker's count of its first reply
    finally:
        parent.send({"cmd": "stop"})
        proc.wait(timeout=60)


@pytest.mark.gpu
def test_a_shared_offset_past_the_mapping_is_a_protocol_error_not_a_read() -> None:
    proc, parent = start_worker("past_the_end")
    try:
        ready = parent.recv(timeout_s=120)
        assert parent.accept_probe(ready["share_probe"]) == ""
        parent.send({"cmd": "run"})
        with pytest.raises(ProtocolError, match="runs past"):
            parent.recv(timeout_s=120)
        torch.cuda.synchronize()  # the parent's context is intact
    finally:
        proc.kill()
        proc.wait(timeout=60)
