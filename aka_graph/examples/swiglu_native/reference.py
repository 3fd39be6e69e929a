"""SwiGLU activation (the gated MLP's middle): silu(gate) * up over [tokens, intermediate] halves of one
fused projection output. An aka_graph example operator in the native (Atrex-Bench) format."""

import torch


class Model(torch.nn.Module):
    def __init__(self, intermediate: int) -> None:
        super().__init__()
        self.intermediate = intermediate

    def forward(self, projected: torch.Tensor) -> torch.Tensor:
        gate, up = projected.split(self.intermediate, dim=-1)
        return (torch.nn.functional.silu(gate.float()) * up.float()).to(projected.dtype)
