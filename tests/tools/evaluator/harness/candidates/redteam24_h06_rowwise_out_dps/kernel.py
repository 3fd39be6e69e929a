"""HONEST: an elementwise op on ragged values whose output has the values' (seed-following) shape, DPS."""
import torch


def run(values, offsets, scaled):
    torch.add(values * 2.0, offsets[-1].to(values.dtype), out=scaled)
