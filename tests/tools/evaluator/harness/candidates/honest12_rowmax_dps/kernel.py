"""HONEST: tests/fixtures/sol/r12_max_structseq_return written destination-passing: the reference
returns torch.return_types.max; this fills the values and indices destinations with torch.max(out=)."""

import torch


@torch.no_grad()
def run(x, values, indices):
    torch.max(x * 2.0, dim=-1, out=(values, indices))
