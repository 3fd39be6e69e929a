"""Red team 5 (warm evaluator), the exploiting half: replay what an earlier candidate left in /dev/shm.

redteam5_shm_plant stored its last call's outputs in /dev/shm, which a warm service shares between all
its candidates. This kernel computes nothing: it copies the stored outputs into `output` (zeros when
there are none). That would pass only if a later evaluation met the inputs an earlier one saw; every
evaluation draws fresh seeds (Session.draw_seeds), so it must be INCORRECT.
"""

from __future__ import annotations

from pathlib import Path

import torch

MEMO = Path("/dev/shm/aka_rt5_memo")


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    try:
        raw = bytearray((MEMO / "out.bin").read_bytes())
    except OSError:
        output.zero_()
        return
    stored = torch.frombuffer(raw, dtype=torch.int16).view(torch.bfloat16)
    flat = output.view(-1)
    n = min(flat.numel(), stored.numel())
    flat[:n].copy_(stored[:n])
    if n < flat.numel():
        flat[n:].zero_()
