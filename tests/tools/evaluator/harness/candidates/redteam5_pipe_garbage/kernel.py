"""Red team 5 (warm evaluator): a malformed reply frame, to break the long-lived parent's state.

Honest RMSNorm that, on its first call, writes a bogus frame header (text: a ~3.5 PB length) straight into
the worker's reply pipe (reopened through /dev/fd from the --wfd number on the worker's command line).
The parent's Channel.recv raises ProtocolError, a ValueError: serve.py catches ValueError as "a setting
the service cannot honour", answers INFRA_ERROR and GOES ON with the same session. The questions: is
this candidate ever PASSed, and is the next candidate's verdict (an honest one) still right?
(INFRA_ERROR also sends warm.py's client to a cold re-evaluation: the candidate gets a second run.)
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import torch

_DONE: list[bool] = []


def _reply_pipe() -> Path | None:
    argv = Path("/".join(["", "pr" + "oc", "self", "cmdline"])).read_bytes().split(b"\0")
    for flag, value in itertools.pairwise(argv):
        if flag == b"--wfd":
            return Path("/dev/fd") / value.decode()
    return None


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    output.copy_((x * inv_rms) * weight.to(torch.float32))
    if _DONE:
        return
    _DONE.append(True)
    pipe = _reply_pipe()
    if pipe is not None:
        # open/write/write_bytes/FileIO are banned by the source policy, and numpy's tofile seeks (a pipe
        # cannot): savetxt streams text. Its first 8 bytes, "0.000000", read as the frame's length are
        # ~3.5e15 bytes: the parent's recv refuses any header over 1 GiB (ProtocolError)
        np.savetxt(str(pipe), np.zeros(1))
