"""HONEST: honest12r_vq_ties_to_the_last (a planted exact tie broken toward the last code, which PASSes on
near_tie_vq), whose load takes 125 s, as a CUDA extension's build or an autotuning sweep does (well within
the 300 s compile timeout). The near-tie budget (BUDGET_S = 120 s) is a wall-clock deadline set when the
session starts, not a budget of reference calls: it is spent before the first output is judged, the
search never runs, and the one tie row makes the kernel INCORRECT."""

import time

import torch

DESTINATION_PASSING_STYLE = False

time.sleep(125.0)  # stands for a long build: nothing else happens


@torch.no_grad()
def run(x: torch.Tensor, codebook: torch.Tensor) -> torch.Tensor:
    dist = (x[:, None, :] - codebook[None, :, :]).pow(2).sum(dim=-1)
    last = codebook.shape[0] - 1 - dist.flip(-1).argmin(dim=-1)
    return codebook[last]
