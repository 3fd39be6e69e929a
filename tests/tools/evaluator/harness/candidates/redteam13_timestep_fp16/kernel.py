"""CHEAT: the timestep embedding computed from timesteps rounded to fp16 (half the bytes; an fp16 t near
1000 is off by up to 0.25), wrong by up to ~0.25 on the high frequencies. The near-tie rule's nudge moves
t by 0.12..0.24 there as well, so some of the errors land on a nudged reference; not enough of them."""

import math

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(t: torch.Tensor) -> torch.Tensor:
    half = 32
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
    angle = t.half().float()[:, None] * freqs[None]
    return torch.cat([torch.cos(angle), torch.sin(angle)], dim=-1)
