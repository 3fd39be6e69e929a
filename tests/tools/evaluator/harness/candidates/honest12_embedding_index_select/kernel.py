"""HONEST: tests/fixtures/sol/r12_one_hot_embedding_matmul as the lookup it is: the rows of the table
gathered by index_select (a one-hot row times the table picks that row exactly), none of the
T x V x D multiply-adds the reference's one-hot matmul executes."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(ids, table):
    return table.index_select(0, ids)
