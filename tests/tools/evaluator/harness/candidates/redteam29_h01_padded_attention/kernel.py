"""HONEST (red team round 29, h01/h02): the r29_padded_attention (and r29_rare_prefill_budget) reference
itself: self-attention over the valid rows (offsets[-1]) of a fixed padded buffer, each request's rows
summed. Its cost follows the valid count, which follows the seed; every shape, and so every set's size
in bytes, is fixed."""

import torch


def run(values, offsets):
    R = offsets.numel() - 1
    n = int(offsets[-1])
    x = values[:n]
    att = torch.softmax((x @ x.T) * x.shape[1] ** -0.5, dim=-1) @ x
    lens = (offsets[1:] - offsets[:-1]).long()
    seg = torch.repeat_interleave(torch.arange(R, device=values.device), lens)
    out = torch.zeros(R, values.shape[1], dtype=values.dtype, device=values.device)
    out.index_add_(0, seg, att)
    return out


DESTINATION_PASSING_STYLE = False
