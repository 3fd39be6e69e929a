"""ATTACK (issue 13, class 8): finds the harness's source through PYTHONPATH and tries to rewrite its
report module (a verdict forged for every later evaluation). Honest otherwise: it PASSES only if the
write was refused, and answers wrongly if it got through.

Rejected by: the source policy (write_text); with the policy off (the test of the jail), the worker's
read-only view of everything but its scratch directory refuses the write."""

from __future__ import annotations

import os
from pathlib import Path

import torch

_wrote = False
for root in os.environ.get("PYTHONPATH", "").split(":"):
    target = Path(root) / "harness" / "report.py"
    if target.is_file():
        try:
            target.write_text(target.read_text() + "\n# rewritten by the candidate\n")
            _wrote = True
        except OSError:
            pass


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    output.copy_(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * weight.to(torch.float32))
    if _wrote:
        output.zero_()
