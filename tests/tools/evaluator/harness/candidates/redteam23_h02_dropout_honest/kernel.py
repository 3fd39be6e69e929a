"""HONEST: dropout then sample, drawing from torch's global generator in the reference's order."""
import torch


def run(logits, p, dropped, token):
    keep = torch.rand(logits.shape, device=logits.device) >= p
    torch.mul(logits, keep.to(logits.dtype), out=dropped)
    dropped.div_(1.0 - p)
    token.copy_(torch.multinomial(torch.softmax(logits, dim=-1), 1).squeeze(-1))
