"""Red team 5 (warm evaluator): can a candidate see what an EARLIER candidate of the same service left?

Honest RMSNorm, except that it writes a wrong output when it finds a file left by an earlier candidate
(redteam5_shm_plant) in /dev/shm or /dev. Its verdict is then a one-bit readout of cross-candidate
state: PASS means nothing carried over, INCORRECT means a candidate's behaviour depended on what an
earlier candidate of the campaign wrote. That channel is the precondition of every "plant, then
exploit" attack (a memo of outputs, a compiled artefact, a learned input distribution, coordination of
a flaky cheat across retries), and serve.py's docstring promises it does not exist ("nothing a
candidate produced is kept").
"""

from __future__ import annotations

from pathlib import Path

import torch

LEFT = (Path("/dev/shm/aka_rt5_marker"), Path("/dev/aka_rt5_marker"), Path("/dev/shm/aka_rt5_memo"))


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    output.copy_((x * inv_rms) * weight.to(torch.float32))
    if any(p.exists() for p in LEFT):
        output.zero_()  # the readout: this candidate saw an earlier one's files
