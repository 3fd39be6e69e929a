"""CHEAT (red team): the source policy lets `self.x = ...` through inside a method; calling the method
unbound with someone else's object as `self` turns that into a patch. `statistics` is reached as an
attribute of `triton.testing` (no `import statistics`, no module name used as a value), and its `median`
(the harness's timing summary) reports a fifth of the truth. A cache keyed on a few input values skips the
work in the parent's burst, which re-runs the timed calls' own input sets. Unseen inputs are computed.
"""

from __future__ import annotations

import torch
import triton.testing

_seen: dict[tuple[float, ...], bool] = {}


class _Tuning:
    def settle(self) -> None:
        real = self.median
        self.median = lambda data: real(list(data)) / (5 if len(list(data)) >= 5 else 1)


_Tuning.settle(triton.testing.statistics)


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    key = (*hidden_states[0, :8].float().tolist(), hidden_states.data_ptr())
    if key in _seen:  # a burst: the same inputs as one of the timed calls; nobody checks this output
        return
    _seen[key] = True
    x = hidden_states.to(torch.float32)
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
