"""The math of the RMSNorm kernel."""

import torch

EPS = 1e-5


def rms_norm_fp32(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    x = x.to(torch.float32)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w.to(torch.float32)
