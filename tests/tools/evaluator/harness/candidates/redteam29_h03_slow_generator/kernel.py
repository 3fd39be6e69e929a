"""HONEST (red team round 29, h03): the r29_slow_generator_burst reference itself (a row scaled by the
sum of its grid coordinates). Fast; only the operator's input generator is slow (~0.2 s a draw)."""

import torch


@torch.no_grad()
def run(x, grid):
    return x * grid.sum(-1, keepdim=True).to(x.dtype)


DESTINATION_PASSING_STYLE = False
