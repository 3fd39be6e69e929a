"""A first Triton RMSNorm: one program per row, the whole 4096-wide row in registers, float32 math.

A correct starting point for a campaign (`python -m aka_graph evaluate` it, or let the agent beat it).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_row(x_ptr, w_ptr, y_ptr, H: tl.constexpr, EPS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, H)
    x = tl.load(x_ptr + row * H + cols).to(tl.float32)
    inv_rms = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / H + EPS)
    w = tl.load(w_ptr + cols).to(tl.float32)
    tl.store(y_ptr + row * H + cols, (x * inv_rms * w).to(y_ptr.dtype.element_ty))


def run(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor) -> None:
    num_tokens, hidden = x.shape
    _rmsnorm_row[(num_tokens,)](x, weight, y, hidden, 1e-6, num_warps=8 if x.is_cuda else 1)
