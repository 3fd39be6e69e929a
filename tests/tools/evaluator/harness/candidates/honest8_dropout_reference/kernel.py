"""HONEST: the r8_dropout_empty_batch operator's own reference as the candidate (honest by definition)."""

import torch


def run(x, p):
    """Inverted dropout drawing its mask from torch's global generator."""
    keep = torch.rand(x.shape, device=x.device) >= p
    return torch.where(keep, x / (1.0 - p), torch.zeros_like(x))


DESTINATION_PASSING_STYLE = False
