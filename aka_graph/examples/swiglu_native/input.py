import torch


def _make_inputs(tokens: int, intermediate: int) -> list[torch.Tensor]:
    # the fused gate/up projection output: [tokens, 2 * intermediate]
    return [torch.randn(tokens, 2 * intermediate, dtype=torch.bfloat16)]
