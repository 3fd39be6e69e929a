"""HONEST: masked softmax for tests/fixtures/sol/r11_idempotent_inplace_mask that leaves its `scores` input
untouched (torch.where into a fresh tensor) where the reference masks `scores` in place. The output is the
reference's exactly; SOL compares only outputs (and calls the solution on the reference's already-masked
inputs, which gives the same answer), so this must PASS."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(scores: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    keep = keep.clone()
    keep[:, 0] = True
    masked = torch.where(keep, scores, torch.full_like(scores, float("-inf")))
    return torch.softmax(masked, dim=-1)
