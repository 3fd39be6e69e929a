"""HONEST: top-8 that breaks ties among equal scores toward the larger position (a kernel scanning the
row from its end does; torch.topk leaves the order among equal scores unspecified). The values are the
reference's exactly; the indices differ wherever equal scores straddle or fill the top 8, which on
integer-valued scores is most rows (well over half of the index elements)."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    n = scores.shape[-1]
    top = scores.flip(-1).topk(8, dim=-1)
    return top.values, n - 1 - top.indices
