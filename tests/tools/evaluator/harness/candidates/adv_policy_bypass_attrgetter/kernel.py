"""CHEAT: a second way past a static source policy — attribute names built at run time.

`getattr(torch, <computed>)` (allowed for dtype names) returns `torch.sys`, the sys module torch re-exports;
`operator.attrgetter` with computed strings then reaches stack frames without spelling a banned name. The
frame walk is adv_frame_walk_timer's: it edits the harness's timing data (GPU: the graph timer's call count;
host timing: the finished samples), replacing no function. The kernel is honest torch.
"""

from __future__ import annotations

import operator

import torch

_FACTOR = 2.5
_shrunk: dict[int, int] = {}
_sys = getattr(torch, "s" + "ys")
_frame_of = operator.attrgetter("_get" + "frame")(_sys)
_locals_of = operator.attrgetter("f_" + "locals")
_back_of = operator.attrgetter("f_" + "back")
_name_of = operator.attrgetter("f_" + "code.co_name")


def _tamper() -> None:
    frame = _frame_of(2)
    while frame is not None:
        local = _locals_of(frame)
        owner = local.get("self")
        if (type(owner).__name__ == "GraphTimer" and not hasattr(owner, "_aka")
                and torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()):
            owner.calls = int(owner.calls * _FACTOR)
            owner._aka = True
            return
        samples = local.get("samples")
        if _name_of(frame) == "time_host" and isinstance(samples, list):
            for i in range(_shrunk.get(id(samples), 0), len(samples)):
                samples[i] /= _FACTOR
            _shrunk[id(samples)] = len(samples)
            return
        frame = _back_of(frame)


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    _tamper()
    x = hidden_states.to(torch.float32)
    output.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
