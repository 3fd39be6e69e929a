"""A first candidate for the native SwiGLU example: the reference's math as a `Model`, in place of a
kernel (a baseline the agent is asked to beat; it shows the native candidate contract)."""

import torch


class Model(torch.nn.Module):
    def __init__(self, intermediate: int) -> None:
        super().__init__()
        self.intermediate = intermediate

    def forward(self, projected: torch.Tensor) -> torch.Tensor:
        gate, up = projected[:, : self.intermediate], projected[:, self.intermediate :]
        return (torch.nn.functional.silu(gate.float()) * up.float()).to(projected.dtype)
