"""HONEST: tests/fixtures/sol/r12_bucketize_searchsorted by counting comparisons: a bin index is the
number of boundaries <= x (right=True), a left insertion point the number of sorted entries < q."""

import torch

DESTINATION_PASSING_STYLE = False


def run(x, boundaries, seqs, queries):
    bins = (x.unsqueeze(-1) >= boundaries).sum(-1)
    pos = (seqs.unsqueeze(1) < queries.unsqueeze(-1)).sum(-1).to(torch.int32)
    return bins, pos
