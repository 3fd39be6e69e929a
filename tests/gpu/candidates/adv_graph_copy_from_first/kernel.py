"""CHEAT (issue 13, class 1, the CUDA-graph path): computes only the first call of the captured graph and,
for every later call, launches an elementwise kernel that copies that first answer into its own output.

With identical rotated copies the answer is right for every copy; re-validation writes one fresh set into
the two copies it checks (the last and copy 0), so the copy is right there too; the capture holds a kernel
per call. Caught by: fresh inputs in every copy before the graph is timed, and a random sample of copies
verified after the fact (graphcheck.py)."""

from __future__ import annotations

import torch

_first: dict[tuple[int, ...], torch.Tensor] = {}


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    key = tuple(hidden_states.shape)
    if torch.cuda.is_current_stream_capturing() and key in _first:
        torch.mul(_first[key], 1, out=output)  # a kernel node per call, no work
        return
    x = hidden_states.to(torch.float32)
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
    if torch.cuda.is_current_stream_capturing():
        _first[key] = output
