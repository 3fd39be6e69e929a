"""HONEST: the gated delta-rule decode step of tests/fixtures/sol/r11_gdn_decode_flashinfer_style, batched
over (batch, head) with einsum instead of the reference's Python loop, destination-passing (writes
`output` and `new_state`); the scalar `scale` arrives as a Python float between the tensors, and 0 means
1/sqrt(K) as in the reference. Different summation order, same maths."""

import math

import torch
import torch.nn.functional as F


@torch.no_grad()
def run(q, k, v, state, A_log, a, dt_bias, b, scale, output, new_state):
    _, _, HQ, K = q.shape
    HV = v.shape[2]
    if not scale:
        scale = 1.0 / math.sqrt(K)
    g = torch.exp(-torch.exp(A_log.float()) * F.softplus(a.float() + dt_bias.float()))[:, 0]  # [B, HV]
    beta = torch.sigmoid(b.float())[:, 0]
    qe = q[:, 0].float().repeat_interleave(HV // HQ, dim=1)  # [B, HV, K]
    ke = k[:, 0].float().repeat_interleave(HV // k.shape[2], dim=1)
    ve = v[:, 0].float()  # [B, HV, V]
    s = state.float().transpose(-1, -2) * g[..., None, None]  # [B, HV, K, V]
    old_v = torch.einsum("bhk,bhkv->bhv", ke, s)
    delta = beta[..., None] * (ve - old_v)  # new_v - old_v
    s = s + ke[..., :, None] * delta[..., None, :]
    out = scale * torch.einsum("bhk,bhkv->bhv", qe, s)
    output.copy_(out[:, None].to(output.dtype))
    new_state.copy_(s.transpose(-1, -2))
