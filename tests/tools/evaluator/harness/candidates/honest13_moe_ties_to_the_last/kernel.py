"""HONEST: top-2 MoE routing that breaks ties among equal bf16 logits toward the last expert (a kernel
scanning experts from the end does; torch.topk keeps its own order). On near_tie_moe_bf16 a few percent of
tokens go to another expert than the reference's, and their rows differ by a whole expert's output."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(hidden: torch.Tensor, router_logits: torch.Tensor, expert_w: torch.Tensor) -> torch.Tensor:
    num_experts = router_logits.shape[-1]
    top = router_logits.float().flip(-1).topk(2, dim=-1)
    experts = num_experts - 1 - top.indices
    gate = torch.softmax(top.values, dim=-1)
    x = hidden.float()
    out = torch.zeros(hidden.shape, dtype=torch.float32, device=hidden.device)
    for e in range(num_experts):  # expert by expert, as a grouped kernel would
        for k in range(2):
            rows = (experts[:, k] == e).nonzero().squeeze(1)
            if rows.numel():
                out[rows] += gate[rows, k : k + 1] * (x[rows] @ expert_w[e].float())
    return out.to(torch.bfloat16)
