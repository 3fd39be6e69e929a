"""HONEST: the two-output native operator (tests/fixtures/native_two_outputs), both outputs on every call,
the row statistic computed once in float32."""

import torch


class Model(torch.nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rstd = (x * x).mean(dim=-1, keepdim=True).add_(1e-6).rsqrt_()
        return (x * rstd).mul_(self.weight), rstd
