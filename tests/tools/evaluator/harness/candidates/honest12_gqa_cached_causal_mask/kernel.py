"""HONEST: tests/fixtures/sol/r12_sdpa_gqa_causal_math_backend written out: K/V heads repeated for
their query groups, scores in float32, and the causal mask built once per (length, device) by
functools.lru_cache and reused by later calls (a constant of the shape, never an output)."""

import functools
import math

import torch

DESTINATION_PASSING_STYLE = False


@functools.lru_cache(maxsize=16)
def _causal_mask(s: int, device: torch.device) -> torch.Tensor:
    return torch.ones(s, s, dtype=torch.bool, device=device).tril()


@torch.no_grad()
def run(q, k, v):
    groups = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(groups, dim=1).float()
    v = v.repeat_interleave(groups, dim=1).float()
    scores = (q.float() @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~_causal_mask(q.shape[2], q.device), float("-inf"))
    return (torch.softmax(scores, dim=-1) @ v).to(q.dtype)
