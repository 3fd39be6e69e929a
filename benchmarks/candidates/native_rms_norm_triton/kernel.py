"""Triton candidate `Model` for the native rms_norm operator: same signature and weight as the reference.

One fused pass per row block (fp32 reduction); rows per program and warps follow the row length so a
row's 8-16 KiB stay in registers; several rows per program under TRITON_INTERPRET=1.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rmsnorm_rows(x_ptr, w_ptr, y_ptr, n_rows, stride_x, stride_y, eps,
                  N: tl.constexpr, BLOCK_N: tl.constexpr, ROWS: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < N
    mask = (rows < n_rows)[:, None] & col_mask[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=1) / N + eps)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    y = (x * inv_rms[:, None]) * w[None, :]
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


def _config(n_rows: int, block_n: int) -> tuple[int, int]:
    """(rows per program, warps)."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return min(16, triton.next_power_of_2(max(n_rows, 1))), 1
    if block_n <= 1024:
        return 4, 4
    if block_n <= 2048:
        return 2, 8
    return 1, 8 if block_n <= 4096 else 16


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6, dtype: str = "bfloat16") -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(1000 + hidden_size)
        weight = 1.0 + 0.1 * torch.randn(hidden_size, generator=gen)
        self.weight = nn.Parameter(weight.to(getattr(torch, dtype)), requires_grad=False)
        self.eps = eps

    @torch.no_grad()
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = x.shape[-1]
        x2 = x.reshape(-1, hidden)
        if x2.stride(-1) != 1:
            x2 = x2.contiguous()
        out = torch.empty_like(x2)
        n_rows = x2.shape[0]
        block_n = triton.next_power_of_2(hidden)
        rows, warps = _config(n_rows, block_n)
        _rmsnorm_rows[(triton.cdiv(n_rows, rows),)](
            x2, self.weight, out, n_rows, x2.stride(0), out.stride(0), self.eps,
            N=hidden, BLOCK_N=block_n, ROWS=rows, num_warps=warps)
        return out.reshape(x.shape)
