"""HONEST: tests/fixtures/sol/r12_jit_script_helper as a Triton kernel (one program per BLOCK of a row;
the harness runs it under TRITON_INTERPRET=1 on CPU), tanh written through exp as Triton has no tanh."""

import torch
import triton
import triton.language as tl

DESTINATION_PASSING_STYLE = False


@triton.jit
def _bias_gelu(x_ptr, b_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    keep = cols < n_cols
    h = tl.load(x_ptr + row * n_cols + cols, mask=keep, other=0.0)
    h += tl.load(b_ptr + cols, mask=keep, other=0.0)
    inner = 0.7978845608 * (h + 0.044715 * h * h * h)
    tanh = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0
    tl.store(y_ptr + row * n_cols + cols, 0.5 * h * (1.0 + tanh), mask=keep)


def run(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    rows, cols = x.shape
    block = 32
    _bias_gelu[(rows, triton.cdiv(cols, block))](x, b, y, cols, BLOCK=block)
    return y
