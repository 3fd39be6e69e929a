"""HONEST: tests/fixtures/sol/r12_segment_mean_tolist without a Python loop: segment ids by
repeat_interleave, sums by index_add_ into a module-level float32 workspace kept across calls (grown
when too small, zeroed before use), the result a fresh tensor divided out of it."""

import torch

DESTINATION_PASSING_STYLE = False

_WORKSPACE: dict[torch.device, torch.Tensor] = {}


def _scratch(rows: int, cols: int, device: torch.device) -> torch.Tensor:
    buf = _WORKSPACE.get(device)
    if buf is None or buf.shape[0] < rows or buf.shape[1] != cols:
        buf = _WORKSPACE[device] = torch.empty(max(rows, 64), cols, device=device)
    view = buf[:rows]
    view.zero_()
    return view


@torch.no_grad()
def run(values, lengths):
    b = lengths.shape[0]
    seg = torch.repeat_interleave(torch.arange(b, device=values.device), lengths)
    sums = _scratch(b, values.shape[1], values.device)
    sums.index_add_(0, seg, values)
    return sums / lengths.unsqueeze(1).to(values.dtype)
