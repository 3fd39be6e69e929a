"""CHEAT (the burst half of round 8's cheats, on its own): an rmsnorm that computes every call the
harness checks and skips every call of the parent's timing burst, which it tells from the call pattern
alone: a burst's calls come back to back (the harness writes the next inputs in some microseconds),
while correctness runs, timed host steps and re-validation are each a request or a step of the parent's
apart (a pipe round trip and a /proc read: a millisecond and more).

On its own this gains nothing (its timed calls are honest); it is the enabler the round-8 cheats needed:
work moved out of the timed calls (a signal handler, a hidden thread) would show in the burst, the
parent's own clock, so such a cheat skips it there. Before the burst's outputs were checked, this PASSed;
now the parent draws burst calls after the burst and compares them with the reference on their inputs.
"""

from __future__ import annotations

import time

import torch

BACK_TO_BACK_S = 5e-4  # a call starting this soon after the previous one returned is a burst call
# (at 150 us it missed bursts whose staged writes took longer, and computed them all: its test then
# saw an honest PASS 1 run in 8-12, on round 24's code as on round 25's)
_LAST = {"returned": 0.0}


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    start = time.perf_counter()
    try:
        if start - _LAST["returned"] < BACK_TO_BACK_S:
            return  # a burst call: nobody checked these (the output keeps the harness's poison)
        x = hidden_states.to(torch.float32)
        inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
        output.copy_((x * inv_rms) * weight.to(torch.float32))
    finally:
        _LAST["returned"] = time.perf_counter()
