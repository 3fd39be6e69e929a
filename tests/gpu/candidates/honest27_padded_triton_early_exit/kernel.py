"""HONEST (round 28): r27_padded_bimodal's segment sums as one Triton kernel that reads the valid count on
the device: a block past offsets[-1] returns at once, so its cost follows the seed's valid rows while it
never waits on the host (a CUDA graph captures it; the reference, which reads the count on the host,
cannot be captured)."""

import torch
import triton
import triton.language as tl


@triton.jit
def _segment_sums(values, offsets, out, R, D: tl.constexpr, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    n = tl.load(offsets + R)
    if start < n:
        rows = start + tl.arange(0, BLOCK)
        cols = tl.arange(0, D)
        valid = rows < n
        seg = tl.zeros([BLOCK], dtype=tl.int32)
        for r in range(1, R):
            seg += (rows >= tl.load(offsets + r)).to(tl.int32)
        x = tl.load(values + rows[:, None] * D + cols[None, :], mask=valid[:, None], other=0.0)
        tl.atomic_add(out + seg[:, None] * D + cols[None, :], x, mask=valid[:, None])


def run(values, offsets):
    R = offsets.numel() - 1
    N, D = values.shape
    out = torch.zeros(R, D, dtype=values.dtype, device=values.device)
    block = 64
    _segment_sums[(triton.cdiv(N, block),)](values, offsets, out, R, D=D, BLOCK=block)
    return out


DESTINATION_PASSING_STYLE = False
