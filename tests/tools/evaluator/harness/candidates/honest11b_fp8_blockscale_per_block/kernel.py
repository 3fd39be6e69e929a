"""HONEST: the fp8 block-scaled GEMM of tests/fixtures/sol/r11_fp8_blockscale_gemm computed block by block
as a real kernel does: for each 128-wide K block an fp32 partial GEMM of the raw fp8 values, scaled by the
activation's per-row and the weight's per-block scale and accumulated in fp32 (different rounding order from
the reference's dequantise-then-matmul), written as bfloat16."""

import torch

BLOCK = 128
DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(a, a_scale, b, b_scale):
    M, K = a.shape
    N = b.shape[0]
    acc = torch.zeros(M, N, dtype=torch.float32, device=a.device)
    af, bf = a.float(), b.float()
    for kb in range(K // BLOCK):
        part = af[:, kb * BLOCK : (kb + 1) * BLOCK] @ bf[:, kb * BLOCK : (kb + 1) * BLOCK].T  # [M, N]
        col_scale = b_scale[:, kb].repeat_interleave(BLOCK)  # [N]
        acc += part * a_scale[:, kb : kb + 1] * col_scale[None, :]
    return acc.to(torch.bfloat16)
