"""HONEST: tests/fixtures/sol/r12_diagonal_of_full_matmul without the M x M product: each row's dot
product alone, as a batched [1, K] x [K, 1] matmul in bfloat16 (float32 accumulation, rounded to
bfloat16 as the reference's product is), M times fewer FLOPs than the reference executes."""

import torch

DESTINATION_PASSING_STYLE = False


@torch.no_grad()
def run(A, B):
    return torch.bmm(A.unsqueeze(1), B.unsqueeze(2)).view(-1).float()
