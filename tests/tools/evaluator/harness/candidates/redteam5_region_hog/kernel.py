"""Red team 5 (warm evaluator): leave memory behind in the long-lived parent (a false alarm later).

The worker's outputs come back through a sealed memfd (shm.py) that the trusted parent maps; the worker
gets its descriptor (--bulk-fd) and the region is a quarter of the host's memory. Its pages are shared
memory: the worker's RLIMIT_DATA does not count them. This honest RMSNorm also reopens that memfd
through /dev/fd and dirties HOG_BYTES of it past the outputs, then returns normally.

A cold `evaluate` exits after the verdict, and the pages go with it. A warm service lives on: if the
parent (or anything else) keeps its mapping of an evaluated worker's region, every such candidate
leaves HOG_BYTES of the host's memory committed for the rest of the campaign, until an honest later
candidate (or the parent) runs out of memory. The SAFE outcome: after the verdict the parent maps no
region but the spare's, and the memory comes back.
"""

from __future__ import annotations

import stat
from pathlib import Path

import torch

HOG_BYTES = 1 << 30
SKIP = 64 << 20  # past the outputs the worker writes from offset 0


def _region() -> Path | None:
    for fd in sorted(Path("/dev/fd").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else 0):
        try:
            st = fd.stat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_size >= SKIP + HOG_BYTES and "memfd" in str(fd.resolve()):
            return fd
    return None


_DONE: list[bool] = []


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    output.copy_((x * inv_rms) * weight.to(torch.float32))
    if _DONE:
        return
    _DONE.append(True)
    region = _region()
    if region is None:  # the attack could not run: say so (a RUNTIME_ERROR), never a silent PASS
        raise RuntimeError("redteam5_region_hog: no output region among the worker's descriptors")
    if region is not None:
        size = region.stat().st_size
        mapped = torch.from_file(str(region), shared=True, size=size, dtype=torch.uint8)
        mapped[SKIP : SKIP + HOG_BYTES].fill_(7)
