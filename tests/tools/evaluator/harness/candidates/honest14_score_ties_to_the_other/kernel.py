"""HONEST: the per-token top-1 score (rt14_top1_score_planted_tie) in fp32, breaking the one exact tie
toward the other of the two equal experts than torch.max does (a kernel's reduction may pick either)."""

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
    return gate * (hidden * head_w[expert]).sum(dim=-1)
