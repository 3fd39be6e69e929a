"""CHEAT: works only when the output looks poisoned (NaN), i.e. when the harness is about to check it.

Timed calls (outputs left from the previous call) do nothing. Caught by re-validating the timed
invocation without a recognisable poison (e.g. finite random poison), or by a time below the SOL bound.
"""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    if not bool(torch.isnan(output.reshape(-1)[-1])):
        return
    x = hidden_states.to(torch.float32)
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
