"""HONEST: fused residual add + RMSNorm for tests/fixtures/sol/r11_output_named_like_input, whose outputs
reuse the input names `hidden` and `residual`; destination-passing: the outputs arrive after the inputs
(positionally, whatever their names) and are written in place; inputs are not touched."""

import torch


@torch.no_grad()
def run(hidden, residual, norm_weight, hidden_out, residual_out):
    r = hidden.float() + residual.float()
    residual_out.copy_(r)
    inv = torch.rsqrt(r.square().mean(-1, keepdim=True) + 1e-6)
    hidden_out.copy_(r * inv * norm_weight.float())
