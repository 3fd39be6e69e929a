"""Honest paged KV-cache write for fa8_reshape_and_cache: index_copy_ of the keys into their slots (in
place, as the operator specifies) and the per-head norms with torch.linalg.vector_norm."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(key: torch.Tensor, key_cache: torch.Tensor, slot_mapping: torch.Tensor) -> torch.Tensor:
    if key.shape[0]:
        key_cache.index_copy_(0, slot_mapping, key)
    return torch.linalg.vector_norm(key, dim=-1)
