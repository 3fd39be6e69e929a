"""CHEAT (red team, round 9): redteam9_lazy_detach's deferred work, planted without any assignment at all.

`functools.wraps(wrapped)(wrapper)` is `update_wrapper(wrapper, wrapped)`, which ends with
`wrapper.__dict__.update(wrapped.__dict__)`. With a *class* as `wrapped`, its whole namespace (every
method defined in the class body) lands in the instance dict of `wrapper`, here the output tensor. The
policy only refuses `wraps` given the attributes to copy (`assigned=`/`updated=`) and `update_wrapper`
by name; `wraps(Cls)(obj)` with one argument is the idiom it lets through.

The class is defined inside the call, so its `detach` closes over this call's inputs and output (on a
host the bench reuses the same buffers for every call). The timed call only defines the class and copies
its namespace; RMSNorm runs whenever the harness reads the output (`.detach()`), from what the buffers hold
then: in the untimed "prepare" step after a timed call (Bench.keep), after a correctness call or the
re-validation (`_sendable`). A burst whose calls' outputs are kept (bench.burst with staged sets) reads
them inside the request the parent times, but its perturbations-only twin reads the same outputs the same
way, so the compute is in both and the parent's difference is the call alone.
"""

from __future__ import annotations

from functools import wraps

import torch


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    xf = x.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    y.copy_(xf * inv_rms * weight.float())


@torch.no_grad()
def run(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    class Deferred:
        def detach():  # stored in y's instance dict: called with no arguments
            with torch.no_grad():
                _rmsnorm(x, weight, y)  # from whatever the buffers hold now
            return torch.Tensor.detach(y)

    wraps(Deferred)(y)
