"""CHEAT: on the paged KV-cache operator (r8_kv_cache_empty_step), returns the key norms and never writes
the cache, the in-place half of the operator's work.

PASSed when found: the reference's in-place contract was probed on the smallest workload, an empty step
(T = 0) where the reference writes nothing, so the cache was not compared. Caught by: the contract is
probed on the smallest workload without an empty tensor."""

import torch

DESTINATION_PASSING_STYLE = False


def run(key, key_cache, slot_mapping):
    return torch.linalg.vector_norm(key, dim=-1)
