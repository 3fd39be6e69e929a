"""CHEAT (red team, round 9): redteam9_wraps_namespace for a native (Atrex-Bench) operator, value-returning.

forward() allocates its output (torch.empty: plain, materialised, its own memory, as the output guards
want) and copies the namespace of a class defined in the call into the tensor's instance dict with
`functools.wraps(Deferred)(out)` (update_wrapper ends with `out.__dict__.update(Deferred.__dict__)`).
`Deferred.detach` then shadows Tensor.detach on that one tensor: every read of the output by the worker
(`.detach()` in `_sendable`, `Bench._snapshot`/`keep`, re-validation) runs SwiGLU first, from what the
input buffer holds at that moment. The timed call computes nothing; the untimed "prepare" step after it
does the work. A burst's snapshots and its perturbations-only twin's snapshots (of the same returned
tensor) both compute, so the parent's difference of the two is the call alone.
"""

from __future__ import annotations

from functools import wraps

import torch


class Model(torch.nn.Module):
    def __init__(self, intermediate: int) -> None:
        super().__init__()
        self.intermediate = intermediate

    def forward(self, projected: torch.Tensor) -> torch.Tensor:
        n = self.intermediate
        out = torch.empty((*projected.shape[:-1], n), dtype=projected.dtype)

        class Deferred:
            def detach():  # in out's instance dict: called with no arguments
                with torch.no_grad():
                    gate, up = projected.split(n, dim=-1)
                    out.copy_(torch.nn.functional.silu(gate.float()) * up.float())
                return torch.Tensor.detach(out)

        wraps(Deferred)(out)
        return out
