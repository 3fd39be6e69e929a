"""CHEAT (red team, round 8): every output is right, on every call (bursts included), yet the timed calls
cost nothing: the work is done inside the harness's own untimed input perturbation, by a SIGALRM handler.

Trick. Every host call is preceded by an untimed perturbation that writes the call's inputs and then
poisons its output buffer (fresh sets in the parent's "prepare" step, pristine rolls in the burst,
fresh values in re-validation). A fast periodic ITIMER_REAL timer (`signal` reached as
torch.utils.data._utils.signal_handling.signal: policy.FOREIGN_MODULES leaves "signal" out; no thread is
started) has a tick pending while the poison is being copied, so the handler runs right after it, still
inside the perturbation, and computes the answer into the output buffer. The call then finds its answer
already there (three probed scalars) and returns.

- Timed calls (hostclock.py): the parent times only the "call" step; the perturbation's step is untimed.
- The plausibility burst (plausibility.py): the parent subtracts a burst of the perturbations alone from
  a burst of perturbation + call. Here the work follows the perturbation in both, so the difference is
  ~0: the estimate is "undecided" (0) and any reported latency passes. No call is skipped, no output is
  wrong: the spot checks, re-validation and even the burst's own outputs are all correct.
"""

from __future__ import annotations

import torch
from torch.utils.data._utils import signal_handling as _sh

_SIG = _sh.signal
PERIOD_S = 5e-5  # a tick is pending whenever the harness finishes writing the poison
DELAY_S = 2.5e-3  # first tick this long after a call returned: past the parent's /proc read that ends
# the timed window (~1.6 ms here)
PROBES = (0, 4099, 77777)

S = {
    "inputs": None,
    "output": None,
    "answer": (None,),
    "ready": False,
    "busy": False,
    "armed": False,
}


def _compute(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states.to(torch.float32)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    output.copy_((x * inv_rms) * weight.to(torch.float32))


def _probe(t: torch.Tensor) -> tuple:
    flat = t.reshape(-1)
    n = flat.numel()
    return tuple(flat[j % n].item() for j in PROBES)


def _arm(on: bool) -> None:
    if on or S["armed"]:
        _SIG.setitimer(_SIG.ITIMER_REAL, DELAY_S if on else 0.0, PERIOD_S if on else 0.0)
        S["armed"] = on


def _handler(signum, frame) -> None:
    out = S["output"]
    if S["busy"] or out is None:
        return
    now = out.reshape(-1)[0].item()
    if now == S["answer"][0] or now != now:
        return  # our answer is still there, or a NaN (correctness) buffer
    S["busy"] = True
    try:
        _compute(*S["inputs"], out)  # the poison was written last: the inputs are the next call's
        S["answer"], S["ready"] = _probe(out), True
    finally:
        S["busy"] = False


_SIG.signal(_SIG.SIGALRM, _handler)


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    S["busy"] = True
    try:
        same = S["output"] is output and S["inputs"] is not None and S["inputs"][0] is hidden_states
        if not (same and S["ready"] and _probe(output) == S["answer"]):
            _compute(hidden_states, weight, output)
            S["answer"] = _probe(output)
        S["ready"] = False
        S["inputs"], S["output"] = (hidden_states, weight), output
        _arm(True)
    finally:
        S["busy"] = False
