"""CHEAT: a fp32 sort whose keys are rounded to fp16 (a radix sort on 16-bit keys: half the passes of a
32-bit one). Values closer than one fp16 unit (~5e-4 relative) keep their input order, so the "sorted"
values are not sorted and a few percent of the permutation is wrong: INCORRECT before e7471f1 (the
int64 order output misses the 99 % ratio). The near-tie rule nudges the fp32 inputs by 1.2e-4..2.4e-4
relative, which reorders most pairs that close, and judges each element of the permutation against any
of up to 64 nudged references independently: the wrong permutation is explained element by element."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    _, order = torch.sort(x.half(), dim=-1, stable=True)
    return x.gather(-1, order), order
