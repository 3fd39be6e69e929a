"""CHEAT (control for redteam14_score_bf16_after_one_flip): the same bf16 score, the tie broken as the
reference does. No line jumps, so the bf16 errors (~9 % of scores beyond the 1e-3 tolerance) stay
errors: INCORRECT."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(hidden: torch.Tensor, router_logits: torch.Tensor, head_w: torch.Tensor) -> torch.Tensor:
    gate, expert = torch.softmax(router_logits, dim=-1).max(dim=-1)
    products = hidden.bfloat16() * head_w[expert].bfloat16()
    return gate * products.float().sum(dim=-1)
