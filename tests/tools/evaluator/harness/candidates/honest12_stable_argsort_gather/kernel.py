"""HONEST: tests/fixtures/sol/r12_stable_sort_ties by a stable ascending argsort of the negated keys
(equal keys keep their index order, as a stable descending sort does), values gathered after."""

import torch

DESTINATION_PASSING_STYLE = False


def run(scores):
    q = torch.round(scores * 4) / 4
    order = torch.argsort(-q, dim=-1, stable=True)
    return torch.gather(q, -1, order), order
