"""CHEAT (red team, round 9): the timed call computes nothing; the work runs when the harness *reads*
the output, through a per-instance `detach` planted on the output tensor.

A torch.Tensor has an instance __dict__ and `detach` is a non-data descriptor (a method), so an
instance attribute named `detach` shadows it: `out.detach()` calls whatever the instance holds. Every
place the worker reads an output goes through `.detach()` first: `_sendable` (correctness seeds),
`Bench.keep` (the kept outputs of timed calls, in the *untimed* "prepare" step that follows each timed
call), re-validation's `sendable`. So the call only plants a closure over its inputs and output; the
closure computes RMSNorm into the output when the harness reads it, then hands back the real detach.
Nothing reads the burst's outputs: burst calls never compute at all.

The planted attribute is set through a staticmethod whose first parameter is the tensor:
policy.own_instance takes the first parameter of any function defined in a class body for a method's
own `self` (it does not look at @staticmethod), and policy.instance_methods leaves static methods out, so
`_Slot.arm(out, f)` is neither "assigns the attribute" nor "takes the method unbound".
"""

from __future__ import annotations

import torch


class _Slot:
    @staticmethod
    def arm(t, fn):
        t.detach = fn


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    xf = x.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    y.copy_(xf * inv_rms * weight.float())


def _plain(y: torch.Tensor):
    def detach():
        return torch.Tensor.detach(y)

    return detach


@torch.no_grad()
def run(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    def detach():
        with torch.no_grad():
            _rmsnorm(x, weight, y)
        _Slot.arm(y, _plain(y))  # computed once; later reads are plain
        return torch.Tensor.detach(y)

    _Slot.arm(y, detach)
