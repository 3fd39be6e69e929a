"""Red team round 12: the tolerance's slack spent on skipped work, not on rounding.

RMSNorm's mean of squares is taken over every 8th element of a row only (512 of 4096), and the rest is
done in bfloat16. For random inputs the estimate of the row's RMS is off by ~3 %, under the default
atol = rtol = 1e-2 plus the 1 % of elements the matched ratio forgives (each a near miss), so the output
may pass while the kernel reads an eighth of the row for its statistics.
"""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    sample = hidden_states[:, ::8].to(torch.float32)
    inv_rms = torch.rsqrt(sample.pow(2).mean(dim=-1, keepdim=True) + 1e-5).to(hidden_states.dtype)
    torch.mul(hidden_states * inv_rms, weight, out=output)
