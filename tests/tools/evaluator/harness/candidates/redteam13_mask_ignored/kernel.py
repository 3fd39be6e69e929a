"""CHEAT: attention that never reads the float key padding mask (skips the mask load and the masked fill:
padded keys are attended like any other). Wrong on every padded sequence. The near-tie rule re-runs the
reference on nudged inputs, and the nudge moves the mask's 0.0 to +-1e-4 (a zero is nudged by the
tensor's RMS): `mask == 0` is then false everywhere, the nudged reference attends every key, and every
element this kernel got wrong is "explained" by the first direction."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1) @ v
