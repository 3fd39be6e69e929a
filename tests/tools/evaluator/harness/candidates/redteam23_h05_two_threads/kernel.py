"""HONEST: RMSNorm that asks torch for two intra-op threads (a CPU kernel parallelising its rows)."""
import torch

torch.set_num_threads(2)


def run(x, weight, y):
    xf = x.float()
    inv = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    y.copy_(xf * inv * weight.float())
