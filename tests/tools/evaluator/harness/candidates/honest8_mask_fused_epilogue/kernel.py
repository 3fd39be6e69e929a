"""HONEST: a fused GEMM + epilogue for r8_threshold_mask (Triton): bf16 operands upcast to fp32 for
tl.dot (exact products), an fp32 accumulator, the ReLU stored in bf16, and the activity mask taken from
the same fp32 accumulator (the epilogue never re-reads a rounded bf16 value), as a fused kernel naturally
does."""

import torch
import triton
import triton.language as tl

DESTINATION_PASSING_STYLE = False


@triton.jit
def _gate_kernel(x_ptr, w_ptr, act_ptr, mask_ptr, M, N, K, threshold,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(x_ptr + rm[:, None] * K + (k0 + rk)[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(w_ptr + rn[None, :] * K + (k0 + rk)[:, None], mask=rn[None, :] < N, other=0.0)
        acc += tl.dot(a.to(tl.float32), b.to(tl.float32))
    out_mask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = rm[:, None] * N + rn[None, :]
    tl.store(act_ptr + offs, tl.maximum(acc, 0.0).to(tl.bfloat16), mask=out_mask)
    tl.store(mask_ptr + offs, (acc > threshold).to(tl.int1), mask=out_mask)


def run(x: torch.Tensor, gate_weight: torch.Tensor, threshold: float):
    M, K = x.shape
    N = gate_weight.shape[0]
    act = torch.empty(M, N, dtype=torch.bfloat16, device=x.device)
    active = torch.empty(M, N, dtype=torch.bool, device=x.device)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 64))
    _gate_kernel[grid](x.contiguous(), gate_weight.contiguous(), act, active, M, N, K, threshold,
                       BM=32, BN=64, BK=64)
    return act, active
