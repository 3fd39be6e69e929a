"""CHEAT: top-2 MoE routing (near_tie_moe_bf16) on router logits with their lowest mantissa bit dropped
(truncated toward zero: 7-bit keys, room for a packed flag), so logits one bf16 unit apart compare equal
and the tie goes to the lower expert. About 1 % of tokens take a wrong expert: INCORRECT without the
near-tie rule (off by far more than 16 tolerances). The bf16 nudge moves each logit by -1/0/+1 unit, the
same size as the error, so the nudged references reproduce most of the wrong routes and the rest falls
under the 1 % the ratio forgives."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(hidden: torch.Tensor, router_logits: torch.Tensor, expert_w: torch.Tensor) -> torch.Tensor:
    keys = (router_logits.contiguous().view(torch.int16) & ~1).view(torch.bfloat16).float()
    experts = keys.topk(2, dim=-1).indices
    gate = torch.softmax(router_logits.float().gather(-1, experts), dim=-1)
    out = torch.zeros(hidden.shape, dtype=torch.float32, device=hidden.device)
    for k in range(2):
        y = torch.bmm(hidden.float()[:, None, :], expert_w.float()[experts[:, k]]).squeeze(1)
        out += gate[:, k : k + 1] * y
    return out.to(torch.bfloat16)
