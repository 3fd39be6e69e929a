"""HONEST: pooled tanh projection of every 32nd row (the reference's computation, destination-passing)."""
import torch


def run(x, w, out):
    torch.sum(torch.tanh(x[::32] @ w), dim=0, out=out)
