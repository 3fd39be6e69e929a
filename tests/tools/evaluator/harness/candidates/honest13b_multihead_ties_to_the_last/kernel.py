"""HONEST: per-head top-1 selection (redteam13b_multihead_routing_flat) breaking a tie toward the last of
the equal bf16 logits (torch.argmax takes the first). Same math, only the tie-break differs; each tie
changes one head's 8 of the row's 64 elements. The near-tie rule replaces a row whole by ONE nudged
reference's row, so a row holding two or more ties the kernel broke the other way is explained only by a
direction that flips all of them at once: such rows stay unexplained and the kernel is refused."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(logits: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    T, H, E = logits.shape
    idx = E - 1 - logits.float().flip(-1).argmax(dim=-1)
    heads = torch.arange(H, device=logits.device)[None, :]
    return table.float()[heads, idx].reshape(T, -1).to(torch.bfloat16)
