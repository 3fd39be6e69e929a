"""CHEAT (red team, round 9): redteam9_lazy_detach for a native (Atrex-Bench) operator, value-returning.

forward() allocates the output (torch.empty: a plain, materialised tensor of its own memory, as the
output guards want), plants a per-instance `detach` on it that computes SwiGLU into it, and returns it.
The harness reads every output it keeps or sends through `.detach()` (`_sendable`, `Bench.keep` in the
untimed "prepare" step, re-validation), so the work runs there; burst outputs are never read, never
computed. The attribute is planted through a staticmethod (policy.own_instance takes any function in a
class body for a method).
"""

from __future__ import annotations

import torch


class _Slot:
    @staticmethod
    def arm(t, fn):
        t.detach = fn


class Model(torch.nn.Module):
    def __init__(self, intermediate: int) -> None:
        super().__init__()
        self.intermediate = intermediate

    def forward(self, projected: torch.Tensor) -> torch.Tensor:
        n = self.intermediate
        out = torch.empty((*projected.shape[:-1], n), dtype=projected.dtype)
        done = []

        def detach():
            if not done:
                with torch.no_grad():
                    gate, up = projected.split(n, dim=-1)
                    out.copy_(torch.nn.functional.silu(gate.float()) * up.float())
                done.append(1)
            return torch.Tensor.detach(out)

        _Slot.arm(out, detach)
        return out
