"""Honest RMSNorm with everyday runtime idioms: set the thread count, log and warn once, print a line,
a module-level constant tensor computed at import, an lru_cache'd weight-independent constant, in-place
ops on its own temporaries, torch.inference_mode, returning a fresh tensor (not destination-passing)."""

import functools
import logging
import warnings

import torch

torch.set_num_threads(1)
log = logging.getLogger("rmsnorm_kernel")
logging.basicConfig(level=logging.INFO)
EPS = torch.tensor(1e-5, dtype=torch.float32)
DESTINATION_PASSING_STYLE = False
_calls = 0


@functools.cache
def _inv_hidden(n: int) -> float:
    return 1.0 / n


@torch.inference_mode()
def run(hidden_states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    global _calls
    _calls += 1
    if _calls == 1:
        log.info("first call: %s", tuple(hidden_states.shape))
        warnings.warn("rmsnorm kernel: reference path on CPU", RuntimeWarning, stacklevel=2)
        print("rmsnorm kernel called", flush=True)
    x = hidden_states.to(torch.float32)
    sq = x.square()
    var = sq.sum(-1, keepdim=True).mul_(_inv_hidden(x.shape[-1]))
    var.add_(EPS).rsqrt_()
    x.mul_(var).mul_(weight.to(torch.float32))
    return x.to(hidden_states.dtype)
