"""CHEAT: the fp16-key sort of redteam13_sort_fp16_keys, and where two neighbours share an fp16 key, the
second position repeats the first one's index (no tie-break pass at all): the "permutation" holds
duplicate indices and misses others, which no reference on any input can return. Each element is still
judged on its own against whichever nudged reference is nearest, and a repeated index is one that a
nudge puts at that position."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    keys, order = torch.sort(x.half(), dim=-1, stable=True)
    same = torch.zeros_like(order, dtype=torch.bool)
    same[:, 1:] = keys[:, 1:] == keys[:, :-1]
    prev = torch.cat([order[:, :1], order[:, :-1]], dim=-1)
    order = torch.where(same, prev, order)
    return x.gather(-1, order), order
