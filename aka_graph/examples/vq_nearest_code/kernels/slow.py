"""Nearest-code lookup by brute force: a [tokens, codes, dim] difference tile per step, no matmul.

Correct, but it does the reference's elementwise work (3 flops per token, code and dimension) in small
tiles with a serial loop over the codebook, so it is slower than the matmul formulation everywhere.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _vq_brute_kernel(x_ptr, cb_ptr, out_ptr, num_tokens, K: tl.constexpr, D: tl.constexpr,
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
        diff = x[:, None, :] - cb[None, :, :]
        dist = tl.sum(diff * diff, axis=2)
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
    block_t, block_k = (16, 16) if x.is_cuda else (128, 128)  # interpreter: at most 2**20 elements a tile
    grid = (triton.cdiv(num_tokens, block_t),)
    _vq_brute_kernel[grid](x, codebook, quantized, num_tokens, codebook_size, dim, block_t, block_k)
