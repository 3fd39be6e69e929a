"""HONEST: tests/fixtures/sol/r12_odd_description_extra_keys (x * sigmoid(x) in float16) choosing its
path by the interpreter's version and platform, read from sys.version_info and sys.platform."""

import sys

import torch

DESTINATION_PASSING_STYLE = False

EXACT_SIGMOID = sys.version_info >= (3, 9) and sys.platform.startswith("linux")


def run(x):
    f = x.float()
    gate = torch.sigmoid(f) if EXACT_SIGMOID else 0.5 * (1.0 + torch.tanh(0.5 * f))
    return (f * gate).to(x.dtype)
