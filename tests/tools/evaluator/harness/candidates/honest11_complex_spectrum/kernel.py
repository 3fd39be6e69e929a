"""HONEST: the windowed spectrum (tests/fixtures/native_complex_spectrum) with the window applied in place
on a copy, the FFT taken over the last dimension as the reference does."""

import torch


class Model(torch.nn.Module):
    def __init__(self, length: int) -> None:
        super().__init__()
        self.register_buffer("window", torch.hann_window(length))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.fft.rfft(x.mul(self.window), n=x.shape[-1])
