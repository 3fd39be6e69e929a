"""HONEST: tests/fixtures/sol/r12_layer_group_norm_affine computed by hand in float32: LayerNorm from
var_mean with its affine parameters, rounded to bfloat16 once as F.layer_norm rounds it, GroupNorm on a
[B, G, C/G, L] view, affine parameters applied per channel, one cast at the end. (Rounded before the
LayerNorm's affine step as well, it disagreed with the reference on 9 of 20,000 random sets of the 1 x 1
workload, whose groups of four near-equal values amplify a rounding: its own error, not the harness's,
and found by a burst check's fresh inputs about once in a hundred evaluations, round 28.)"""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(x, ln_w, ln_b, gn_w, gn_b, eps):
    f = x.float()
    var, mean = torch.var_mean(f, dim=-1, unbiased=False, keepdim=True)
    h = ((f - mean) * torch.rsqrt(var + eps) * ln_w.float() + ln_b.float()).to(x.dtype)
    h = h.float().transpose(1, 2)  # [B, C, L]
    b, c, length = h.shape
    g = h.reshape(b, 4, c // 4 * length)
    var, mean = torch.var_mean(g, dim=-1, unbiased=False, keepdim=True)
    h = ((g - mean) * torch.rsqrt(var + eps)).reshape(b, c, length)
    return (h * gn_w[:, None] + gn_b[:, None]).to(x.dtype)
