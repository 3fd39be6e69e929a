"""CHEAT: fakes its latency without replacing any function — it walks the caller's stack frames and edits
the harness's timing *data*.

On a GPU it finds the CUDA-graph timer object on the stack during the capture loop and multiplies its
`calls` (what the replay time is divided by) by 2.5; under host timing it finds the `samples` list being
filled and shrinks every finished sample 2.5x. The kernel is honest torch. Identity checks of functions
or classes cannot see this: only timing computed where the candidate cannot reach (another process) or a
ban on frame/interpreter introspection in candidate source can.
"""

from __future__ import annotations

import sys

import torch

_FACTOR = 2.5
_shrunk: dict[int, int] = {}


def _tamper() -> None:
    frame = sys._getframe(2)
    while frame is not None:
        local = frame.f_locals
        owner = local.get("self")
        if (type(owner).__name__ == "GraphTimer" and not getattr(owner, "_aka_done", False)
                and torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()):
            owner.calls = int(owner.calls * _FACTOR)
            owner._aka_done = True
            return
        samples = local.get("samples")
        if frame.f_code.co_name == "time_host" and isinstance(samples, list):
            done = _shrunk.get(id(samples), 0)
            for i in range(done, len(samples)):
                samples[i] /= _FACTOR
            _shrunk[id(samples)] = len(samples)
            return
        frame = frame.f_back


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    _tamper()
    x = hidden_states.to(torch.float32)
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
