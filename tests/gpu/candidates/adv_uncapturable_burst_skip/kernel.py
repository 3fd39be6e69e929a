"""CHEAT (CUDA): makes itself uncapturable (a host sync), so it is timed per call in the CUDA-event
fallback, and it computes every call up to the end of the timed calls (correctness, the bench's set-up,
the 30 timed calls and re-validation) and skips every later one: the parent's timing burst.

On its own the skipping gains nothing; it is what a kernel doing its work outside the timed calls needs
to get past the burst, the parent's own clock. Caught by: the burst runs on fresh sets and the parent
checks calls it draws afterwards (spotcheck.verify_burst_calls)."""

from __future__ import annotations

import torch

COMPUTED = 60  # calls of a shape computed before skipping: past the timed calls and re-validation
_count: dict[tuple[int, ...], int] = {}


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    key = tuple(hidden_states.shape)
    n = _count[key] = _count.get(key, 0) + 1
    _ = float(hidden_states[0, 0])  # a host sync: capture fails, the event fallback times each call
    if n > COMPUTED:
        return  # a burst call: the output keeps the harness's poison
    x = hidden_states.to(torch.float32)
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
