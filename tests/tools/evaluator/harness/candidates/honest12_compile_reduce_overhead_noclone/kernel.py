"""HONEST: tests/fixtures/sol/r12_odd_description_extra_keys (x * sigmoid(x) in float16) compiled with
torch.compile(mode="reduce-overhead") and its result returned as torch gives it, as the PyTorch tutorial
does: on CUDA that is memory of a CUDA graph that the next replay of the same shape overwrites (torch
raises if an overwritten result is read). SOL's driver compares each call's outputs before the next call."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.compile(mode="reduce-overhead")
def _silu(x: torch.Tensor) -> torch.Tensor:
    f = x.float()
    return (f * torch.sigmoid(f)).to(x.dtype)


def run(x):
    return _silu(x)
