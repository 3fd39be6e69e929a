"""Nearest-code lookup as a matmul: argmin_k(|c_k|^2 - 2 x.c_k) with a running (min, argmin) per block.

|x|^2 is the same for every code, so it is dropped; the distances come from one tl.dot per code block
instead of materialising a [tokens, codes, dim] difference tensor like the reference does.

Two launch plans, chosen by where the tensors live:
- GPU: the codebook is split across programs too. A grid of 64-token blocks alone gave 4 to 8 programs
  on a 132-SM H200, so small shapes ran on a few SMs and lost to the reference (38 % on 256 tokens).
  Here each program scores a 16-token block against a 128-code slice (tokens/16 x 8 programs: 96 to 128
  for 192 to 256 tokens), writes its slice's (min, argmin), and a second small kernel picks the best
  slice per token and gathers the code row. Ties keep the lowest code index, as in one pass.
- Triton interpreter (CPU): one program over everything, since its cost is per program and per operation.
"""

import torch
import triton
import triton.language as tl

GPU_BLOCK_T = 16  # tokens per program: tl.dot's smallest M, so small shapes still give many programs
GPU_BLOCK_K = 64  # codes per tl.dot
GPU_SLICE = 128  # codes per program (a power of two dividing the codebook: 1024 -> 8 slices)
GPU_WARPS = 4


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
        norms = tl.sum(cb * cb, axis=1)
        dist = norms[None, :] - 2.0 * tl.dot(x, tl.trans(cb), input_precision="ieee")
        block_min = tl.min(dist, axis=1)
        block_arg = tl.argmin(dist, axis=1) + k0
        better = block_min < best
        best_idx = tl.where(better, block_arg, best_idx)
        best = tl.where(better, block_min, best)
    q = tl.load(cb_ptr + best_idx[:, None] * D + cols[None, :])
    tl.store(out_ptr + rows[:, None] * D + cols[None, :], q, mask=row_ok[:, None])


@triton.jit
def _vq_slice_kernel(x_ptr, cb_ptr, slice_min_ptr, slice_idx_ptr, num_tokens, D: tl.constexpr,
                     BLOCK_T: tl.constexpr, BLOCK_K: tl.constexpr, SLICE: tl.constexpr):
    """(min, argmin) of one token block over one codebook slice -> slice_min/idx[slice, token]."""
    rows = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    row_ok = rows < num_tokens
    cols = tl.arange(0, D)
    x = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=row_ok[:, None], other=0.0)
    first = tl.program_id(1) * SLICE
    best = tl.full([BLOCK_T], float("inf"), tl.float32)
    best_idx = tl.zeros([BLOCK_T], tl.int32)
    for k0 in range(first, first + SLICE, BLOCK_K):
        codes = k0 + tl.arange(0, BLOCK_K)
        cb = tl.load(cb_ptr + codes[:, None] * D + cols[None, :])
        norms = tl.sum(cb * cb, axis=1)
        dist = norms[None, :] - 2.0 * tl.dot(x, tl.trans(cb), input_precision="ieee")
        block_min = tl.min(dist, axis=1)
        block_arg = tl.argmin(dist, axis=1) + k0
        better = block_min < best
        best_idx = tl.where(better, block_arg, best_idx)
        best = tl.where(better, block_min, best)
    at = tl.program_id(1) * num_tokens + rows
    tl.store(slice_min_ptr + at, best, mask=row_ok)
    tl.store(slice_idx_ptr + at, best_idx, mask=row_ok)


@triton.jit
def _vq_pick_kernel(slice_min_ptr, slice_idx_ptr, cb_ptr, out_ptr, num_tokens, D: tl.constexpr,
                    SLICES: tl.constexpr, BLOCK_T: tl.constexpr):
    """Per token: the slice with the smallest distance (the first on ties), then its code's row."""
    rows = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    row_ok = rows < num_tokens
    slices = tl.arange(0, SLICES)
    at = slices[None, :] * num_tokens + rows[:, None]
    mins = tl.load(slice_min_ptr + at, mask=row_ok[:, None], other=float("inf"))
    idxs = tl.load(slice_idx_ptr + at, mask=row_ok[:, None], other=0)
    best_slice = tl.argmin(mins, axis=1)
    best_idx = tl.sum(tl.where(slices[None, :] == best_slice[:, None], idxs, 0), axis=1)
    cols = tl.arange(0, D)
    q = tl.load(cb_ptr + best_idx[:, None] * D + cols[None, :], mask=row_ok[:, None], other=0.0)
    tl.store(out_ptr + rows[:, None] * D + cols[None, :], q, mask=row_ok[:, None])


def run_sliced(x: torch.Tensor, codebook: torch.Tensor, quantized: torch.Tensor,
               block_t: int = GPU_BLOCK_T, block_k: int = GPU_BLOCK_K, slice_codes: int = GPU_SLICE,
               num_warps: int = GPU_WARPS) -> None:
    """The GPU plan (also runs under the interpreter, which is how it is tested without a GPU)."""
    num_tokens, dim = x.shape
    codebook_size = codebook.shape[0]
    slices = codebook_size // slice_codes
    slice_min = torch.empty((slices, num_tokens), dtype=torch.float32, device=x.device)
    slice_idx = torch.empty((slices, num_tokens), dtype=torch.int32, device=x.device)
    grid = (triton.cdiv(num_tokens, block_t), slices)
    _vq_slice_kernel[grid](x, codebook, slice_min, slice_idx, num_tokens, dim, block_t, block_k, slice_codes,
                           num_warps=num_warps)
    pick_t = 32
    _vq_pick_kernel[(triton.cdiv(num_tokens, pick_t),)](slice_min, slice_idx, codebook, quantized, num_tokens,
                                                        dim, slices, pick_t, num_warps=num_warps)


def run(x: torch.Tensor, codebook: torch.Tensor, quantized: torch.Tensor) -> None:
    num_tokens, dim = x.shape
    codebook_size = codebook.shape[0]
    if x.is_cuda:  # many small programs; fp32 products: TF32 rounding would flip near-tie argmins
        run_sliced(x, codebook, quantized)
        return
    # the Triton interpreter: one large program (its cost is per program and per op)
    block_t, block_k = triton.next_power_of_2(num_tokens), codebook_size
    grid = (triton.cdiv(num_tokens, block_t),)
    _vq_dot_kernel[grid](x, codebook, quantized, num_tokens, codebook_size, dim, block_t, block_k)
