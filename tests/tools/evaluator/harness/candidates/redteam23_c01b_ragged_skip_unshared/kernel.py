"""CHEAT (red team 23, c01 sharpened): custom_ragged_shapes, whose input shapes follow the seed. On a host
the correctness calls' inputs are tensors over the parent's files (their storage has a filename); timed
calls' are the worker's own. Every call on inputs that are not file-backed is skipped (outputs left as
the harness's poison): before round 23 such an operator's timed calls were never checked."""
import torch


def run(values, offsets, sums):
    if values.untyped_storage().filename is None:
        return  # a timed call (or any the worker drew itself)
    R = offsets.numel() - 1
    lens = (offsets[1:] - offsets[:-1]).long()
    seg = torch.repeat_interleave(torch.arange(R), lens)
    sums.zero_()
    sums.index_add_(0, seg, values)
