"""Nearest-code lookup as a matmul -- INCORRECT on purpose (the demo's failing trial).

The bug: argmax of x.c_k (i.e. argmin of -2 x.c_k) is used as the nearest code, forgetting the |c_k|^2
term of |x - c_k|^2 = |x|^2 - 2 x.c_k + |c_k|^2; codes with large norms win wrongly.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _vq_dot_kernel(x_ptr, cb_ptr, out_ptr, num_tokens, K: tl.constexpr, D: tl.constexpr,
                   BLOCK_T: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    row_ok = rows < num_tokens
    cols = tl.arange(0, D)
    x = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=row_ok[:, None], other=0.0)
    best = tl.full([BLOCK_T], float("inf"), tl.float32)
    best_idx = tl.zeros([BLOCK_T], tl.int32)
    for k0 in range(0, K, BLOCK_K):
        codes = k0 + tl.arange(0, BLOCK_K)
        cb = tl.load(cb_ptr + codes[:, None] * D + cols[None, :])
        dist = -2.0 * tl.dot(x, tl.trans(cb), input_precision="ieee")
        block_min = tl.min(dist, axis=1)
        block_arg = tl.argmin(dist, axis=1) + k0
        better = block_min < best
        best_idx = tl.where(better, block_arg, best_idx)
        best = tl.where(better, block_min, best)
    q = tl.load(cb_ptr + best_idx[:, None] * D + cols[None, :])
    tl.store(out_ptr + rows[:, None] * D + cols[None, :], q, mask=row_ok[:, None])


def run(x: torch.Tensor, codebook: torch.Tensor, quantized: torch.Tensor) -> None:
    num_tokens, dim = x.shape
    codebook_size = codebook.shape[0]
    if x.is_cuda:  # register-sized tiles; fp32 products: TF32 rounding would flip near-tie argmins
        block_t, block_k = 64, 128
    else:  # the Triton interpreter: few, large programs (its cost is per program and per op)
        block_t, block_k = triton.next_power_of_2(num_tokens), codebook_size
    grid = (triton.cdiv(num_tokens, block_t),)
    _vq_dot_kernel[grid](x, codebook, quantized, num_tokens, codebook_size, dim, block_t, block_k)
