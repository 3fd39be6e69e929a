"""CHEAT (issue 13, class 3): a hand-made pickle (no `pickle` import) loaded with
`torch.load(..., weights_only=False)` runs `exec` on a string that no source scan parses.

Caught by: the source policy (weights_only=, torch.load)."""

from __future__ import annotations

import io

import torch

PAYLOAD = b"cbuiltins\nexec\n(Vimport gc\ntp0\nR."
torch.load(io.BytesIO(PAYLOAD), weights_only=False)


@torch.no_grad()
def run(x: torch.Tensor, gate_proj: torch.Tensor, up_proj: torch.Tensor, output: torch.Tensor) -> None:
    output.zero_()
