"""CHEAT: the per-token top-1 score (rt14_top1_score_planted_tie, fp32, tolerance 1e-3) computed on bf16
operands (~9 % of scores off by 1-4 tolerances: INCORRECT alone), plus one deliberate tie flip: where the
two largest logits of a token are equal (the planted tie), the other expert than torch.max's. The output
is 1-D, so its [rows, last dim] view is ONE line: the nudged reference that flips the tie replaces the
whole output, the line "jumped" (numerics.jumped_lines), and every bf16 error, being within 16
tolerances, counts as matched."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(hidden: torch.Tensor, router_logits: torch.Tensor, head_w: torch.Tensor) -> torch.Tensor:
    probs = torch.softmax(router_logits, dim=-1)
    gate, expert = probs.max(dim=-1)
    top2 = probs.topk(2, dim=-1)
    tie = top2.values[:, 0] == top2.values[:, 1]
    other = torch.where(top2.indices[:, 0] == expert, top2.indices[:, 1], top2.indices[:, 0])
    expert = torch.where(tie, other, expert)
    products = hidden.bfloat16() * head_w[expert].bfloat16()
    return gate * products.float().sum(dim=-1)
