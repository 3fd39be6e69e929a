"""HONEST: tests/fixtures/sol/r12_layer_group_norm_affine computed by hand in float32: LayerNorm from
var_mean, GroupNorm on a [B, G, C/G, L] view, affine parameters applied per channel, one cast at the end."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(x, ln_w, ln_b, gn_w, gn_b, eps):
    f = x.float()
    var, mean = torch.var_mean(f, dim=-1, unbiased=False, keepdim=True)
    h = ((f - mean) * torch.rsqrt(var + eps)).to(x.dtype).float() * ln_w.float() + ln_b.float()
    h = h.to(x.dtype).float().transpose(1, 2)  # [B, C, L]
    b, c, length = h.shape
    g = h.reshape(b, 4, c // 4 * length)
    var, mean = torch.var_mean(g, dim=-1, unbiased=False, keepdim=True)
    h = ((g - mean) * torch.rsqrt(var + eps)).reshape(b, c, length)
    return (h * gn_w[:, None] + gn_b[:, None]).to(x.dtype)
