"""HONEST: greedy arg-max over bf16 logits (rt14_greedy_argmax_bf16) that breaks ties toward the last
index (a reduction scanning from the end, or a tree keeping the right operand on equality, does). About 5 %
of the 256 rows hold an exact tie of their two largest logits and get the other token than torch.argmax."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(logits: torch.Tensor) -> torch.Tensor:
    vocab = logits.shape[-1]
    return vocab - 1 - torch.argmax(logits.flip(-1), dim=-1)
