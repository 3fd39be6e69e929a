"""Red team 5 (warm evaluator), the planting half of a cross-candidate channel.

An honest RMSNorm that also leaves state for the NEXT candidate of the same `serve` service: its last
call's inputs and outputs (a memo) under /dev/shm, and a marker file in /dev itself. The worker's jail
remounts every file system read-only except its scratch, /proc and /dev (isolate.py skips /dev/*), so
/dev/shm and, when the service runs as root, the devtmpfs /dev stay writable. Under the bubblewrap
sandbox every cold job gets its own `--dev /dev` (and /dev/shm), discarded with the job; a warm service
is ONE job for the whole campaign, so these files reach every later candidate.

It should PASS (it is honest); the point is what its files do to the next candidate (redteam5_shm_replay,
redteam5_shm_probe).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch

MEMO = Path("/dev/shm/aka_rt5_memo")
MARKERS = (Path("/dev/shm/aka_rt5_marker"), Path("/dev/aka_rt5_marker"))


def _leave(hidden_states: torch.Tensor, output: torch.Tensor) -> None:
    # Path.write_bytes/open are banned by the source policy; numpy's tofile and mkdir are not
    try:
        MEMO.mkdir(exist_ok=True)
        hidden_states.contiguous().view(torch.int16).numpy().tofile(str(MEMO / "in.bin"))
        output.contiguous().view(torch.int16).numpy().tofile(str(MEMO / "out.bin"))
    except OSError:
        pass
    for marker in MARKERS:
        with contextlib.suppress(OSError):
            marker.mkdir(exist_ok=True)


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    output.copy_((x * inv_rms) * weight.to(torch.float32))
    _leave(hidden_states, output)
