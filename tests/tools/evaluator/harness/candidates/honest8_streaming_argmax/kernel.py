"""HONEST: a streaming arg-max for r8_argmax_ties: the vocabulary is scanned in tiles (as a fused
LM-head + greedy kernel does, never materialising a whole row), keeping a running (max, index) per row.
A tile whose max equals the running max takes over (>=): any index that attains the maximum is a valid
arg-max; on exact ties this returns the later tile's index where torch.argmax returns the first."""

import torch

DESTINATION_PASSING_STYLE = False
TILE = 512


@torch.no_grad()
def run(logits: torch.Tensor) -> torch.Tensor:
    rows, vocab = logits.shape
    best = torch.full((rows,), float("-inf"), dtype=torch.float32, device=logits.device)
    best_idx = torch.zeros(rows, dtype=torch.int64, device=logits.device)
    for start in range(0, vocab, TILE):
        vals, idx = logits[:, start : start + TILE].float().max(dim=-1)
        take = vals >= best
        best = torch.where(take, vals, best)
        best_idx = torch.where(take, idx + start, best_idx)
    return best_idx
