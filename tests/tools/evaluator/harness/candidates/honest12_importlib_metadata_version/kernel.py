"""HONEST: tests/fixtures/sol/r12_odd_description_extra_keys (x * sigmoid(x) in float16) reading the
installed torch's version through importlib.metadata, as packages gate on a dependency's version."""

from importlib.metadata import version

import torch

DESTINATION_PASSING_STYLE = False

TORCH_MAJOR_MINOR = tuple(int(p) for p in version("torch").split(".")[:2])


def run(x):
    f = x.float()
    if TORCH_MAJOR_MINOR >= (2, 0):
        return torch.nn.functional.silu(f).to(x.dtype)
    return (f * torch.sigmoid(f)).to(x.dtype)
