"""HONEST: tests/fixtures/sol/r12_odd_description_extra_keys (x * sigmoid(x) in float16) compiled with
torch.compile(mode="reduce-overhead"), PyTorch's documented way to cut launch overhead: on CUDA the
compiled graph is replayed from a CUDA graph whose output memory the next replay reuses, so each result is
cloned before it is returned (a fresh tensor every call). On CPU there is no graph to replay."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.compile(mode="reduce-overhead")
def _silu(x: torch.Tensor) -> torch.Tensor:
    f = x.float()
    return (f * torch.sigmoid(f)).to(x.dtype)


def run(x):
    return _silu(x).clone()
