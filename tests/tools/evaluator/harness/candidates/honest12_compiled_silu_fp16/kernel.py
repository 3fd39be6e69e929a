"""HONEST: tests/fixtures/sol/r12_odd_description_extra_keys (x * sigmoid(x) in float16) through
torch.compile, the function compiled once at import and computing in float32 before the cast back."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.compile(dynamic=True)
def _silu(x: torch.Tensor) -> torch.Tensor:
    f = x.float()
    return (f / (1.0 + torch.exp(-f))).to(x.dtype)


def run(x):
    return _silu(x)
