"""HONEST: tests/fixtures/sol/r12_jit_script_helper with Triton as an optional dependency, found the way
FlashInfer, vLLM and many kernels find theirs: importlib.util.find_spec("triton") at import, the Triton
kernel where the package is there, the same arithmetic in torch where it is not."""

import importlib.util

import torch

DESTINATION_PASSING_STYLE = False

HAS_TRITON = importlib.util.find_spec("triton") is not None

if HAS_TRITON:
    import triton
    import triton.language as tl

    @triton.jit
    def _bias_gelu(x_ptr, b_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        keep = cols < n_cols
        h = tl.load(x_ptr + row * n_cols + cols, mask=keep, other=0.0)
        h += tl.load(b_ptr + cols, mask=keep, other=0.0)
        tanh = 2.0 / (1.0 + tl.exp(-2.0 * 0.7978845608 * (h + 0.044715 * h * h * h))) - 1.0
        tl.store(y_ptr + row * n_cols + cols, 0.5 * h * (1.0 + tanh), mask=keep)


def run(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if not HAS_TRITON:
        h = x + b
        return 0.5 * h * (1.0 + torch.tanh(0.7978845608 * (h + 0.044715 * h**3)))
    x = x.contiguous()
    y = torch.empty_like(x)
    _bias_gelu[(x.shape[0], triton.cdiv(x.shape[1], 32))](x, b, y, x.shape[1], BLOCK=32)
    return y
