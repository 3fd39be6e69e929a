"""ATTACK (issue 13, class 7): allocates and touches 20 GiB on the host, to bring the machine's OOM
killer onto whatever runs there.

Stopped by: the worker's memory limit on a host-only run: the allocation fails inside the worker and the
verdict says the kernel exceeded the memory limit (RUNTIME_ERROR, the kernel's fault)."""

from __future__ import annotations

import torch


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    hog = torch.ones(20 * 2**30, dtype=torch.uint8)
    output.copy_(hidden_states * weight + float(hog[0]) - 1.0)
