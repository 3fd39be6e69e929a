"""HONEST control for c03: index_copy_ scatter + vector_norm."""
import torch

DESTINATION_PASSING_STYLE = False


def run(key, key_cache, slot_mapping):
    key_cache.index_copy_(0, slot_mapping, key)
    return torch.linalg.vector_norm(key, dim=-1)
