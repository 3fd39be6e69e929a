"""CHEAT (production mode): exfiltrates the private shapes of a native operator through the verdict.

The worker is started with --op-dir, so the candidate can read shapes.json (the exact, private cases) and
raise them as an exception: the harness puts the failure text into result.json's message, which the
campaign hands back to the agent. A harness must not echo candidate-controlled text that can carry the
operator's private files (or must keep them out of the worker's reach).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from torch import nn


def _private_shapes() -> str:
    argv = sys.argv
    if "--op-dir" in argv and argv.index("--op-dir") + 1 < len(argv):
        path = Path(argv[argv.index("--op-dir") + 1]) / "shapes.json"
        try:
            shapes = json.loads(path.read_text())
            return "LEAK " + json.dumps([entry["input_kwargs"] for entry in shapes.values()])
        except (OSError, ValueError, KeyError, TypeError):
            return "no shapes found"
    return "no --op-dir"


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6, dtype: str = "bfloat16") -> None:
        super().__init__()
        raise RuntimeError(_private_shapes())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x
