"""GPU tests (marker `gpu`): run on a CUDA host with `python3 -m pytest -m gpu tests/gpu`; everything here
is skipped where torch sees no CUDA device."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _needs_cuda() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (torch.cuda.is_available() is False)")
