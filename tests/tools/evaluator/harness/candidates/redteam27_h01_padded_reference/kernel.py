"""HONEST (red team round 27, h01): the r27_padded_bimodal reference itself, segment sums over the
valid rows (offsets[-1]) of a fixed padded buffer. Its cost follows the valid count, which follows the
seed; every shape is fixed."""

import torch


def run(values, offsets):
    R = offsets.numel() - 1
    n = int(offsets[-1])
    lens = (offsets[1:] - offsets[:-1]).long()
    seg = torch.repeat_interleave(torch.arange(R, device=values.device), lens)
    out = torch.zeros(R, values.shape[1], dtype=values.dtype, device=values.device)
    out.index_add_(0, seg, values[:n])
    return out


DESTINATION_PASSING_STYLE = False
