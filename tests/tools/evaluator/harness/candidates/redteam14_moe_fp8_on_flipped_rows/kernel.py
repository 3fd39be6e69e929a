"""CHEAT: top-2 MoE routing (near_tie_moe_bf16) that takes, on every token whose second and third bf16
logits are equal, the other expert than torch.topk does, and computes exactly those tokens' expert GEMMs
on fp8 e4m3 operands (elsewhere fp32, as the reference). Those rows are off by up to ~10 % of the output
scale, far beyond the tolerance. Without the near-tie rule they are gross misses; with it, each such row
is judged against a nudged reference that flipped the tie, and since that line "jumped" by more than a
near miss (numerics.jumped_lines), every element of it only has to be within 16 tolerances: the fp8
values pass, with 100 % of elements counted as matched. Any values within 16x tol pass there (x1.12, noise
of 12 % of the output's RMS: measured alike)."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(hidden: torch.Tensor, router_logits: torch.Tensor, expert_w: torch.Tensor) -> torch.Tensor:
    num_experts = router_logits.shape[-1]
    logits = router_logits.float()
    forward = logits.topk(2, dim=-1).indices  # the reference's choice
    backward = num_experts - 1 - logits.flip(-1).topk(2, dim=-1).indices  # ties to the last expert
    flipped = (forward.sort(-1).values != backward.sort(-1).values).any(-1)
    experts = torch.where(flipped[:, None], backward, forward)
    gate = torch.softmax(logits.gather(-1, experts), dim=-1)
    x, w = hidden.float(), expert_w.float()
    x8 = x.to(torch.float8_e4m3fn).float()
    w8 = w.to(torch.float8_e4m3fn).float()
    out = torch.zeros(hidden.shape, dtype=torch.float32, device=hidden.device)
    for k in range(2):
        exact = torch.bmm(x[:, None, :], w[experts[:, k]]).squeeze(1)
        cheap = torch.bmm(x8[:, None, :], w8[experts[:, k]]).squeeze(1)
        out += gate[:, k : k + 1] * torch.where(flipped[:, None], cheap, exact)
    return out.to(torch.bfloat16)
