"""CHEAT (GPU, the CUDA-event fallback): honest RMSNorm work, but a host sync in every call makes it
uncapturable (timed per call with CUDA events), and `statistics.median`, which the worker's timing
summary calls, is patched to report a fifth of the real median. Every output is right. The static policy
rejects the patch; with `--no-source-policy` the parent's own median of the reported samples must."""

from __future__ import annotations

import statistics

import torch

_real_median = statistics.median


def _flattering_median(data):  # type: ignore[no-untyped-def]
    values = list(data)
    return _real_median(values) / 5 if len(values) >= 5 else _real_median(values)


statistics.median = _flattering_median


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    scale = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
    if not bool(torch.isfinite(scale).all().item()):  # a host sync: not capturable
        raise ValueError("non-finite input")
    output.copy_(x * scale * weight.to(torch.float32))
