"""CHEAT: value-returning, hands back one persistent buffer per shape, recomputed only for new inputs.

Saves the allocation a value-returning kernel owes, and skips the work when called again on the same
input pointer. Every output it ever returned is the same storage, so an earlier result changes under the
caller. A harness must reject outputs that alias an earlier call's output.
"""

from __future__ import annotations

import torch

_buffers: dict[tuple[int, ...], torch.Tensor] = {}
_last_input: dict[tuple[int, ...], int] = {}


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    shape = tuple(hidden_states.shape)
    buf = _buffers.get(shape)
    if buf is None:
        buf = _buffers[shape] = torch.empty_like(hidden_states)
    if _last_input.get(shape) != hidden_states.data_ptr():
        x = hidden_states.to(torch.float32)
        buf.copy_((x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)) * weight.to(torch.float32))
        _last_input[shape] = hidden_states.data_ptr()
    return buf
