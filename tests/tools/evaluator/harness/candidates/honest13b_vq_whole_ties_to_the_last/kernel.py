"""HONEST: nearest-code lookup on whole-number activations and codes (redteam13b_vq_whole_numbers) that
breaks an exact tie toward the last of the equally near codes (torch.argmin takes the first). Distances of
whole numbers are exact in fp32: only the tie-break differs. A tensor of whole numbers alone is never
nudged, so the near-tie rule cannot see these ties and the kernel is refused."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(x: torch.Tensor, codebook: torch.Tensor) -> torch.Tensor:
    dist = (x[:, None, :] - codebook[None, :, :]).pow(2).sum(dim=-1)
    last = codebook.shape[0] - 1 - dist.flip(-1).argmin(dim=-1)
    return codebook[last]
