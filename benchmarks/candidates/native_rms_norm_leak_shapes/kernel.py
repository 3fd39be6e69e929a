"""CHEAT (production mode): exfiltrates the private shapes of a native operator through the verdict.

The operator directory sits in the job directory the worker runs in, so the candidate can find
shapes.json (the exact, private cases) below its working directory and raise them as an exception: the
harness puts the failure text into result.json's message, which the campaign hands back to the agent.
With --private-shapes the harness must withhold every such text (or keep the files out of reach).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn


def _private_shapes() -> str:
    for path in sorted(Path.cwd().rglob("shapes.json")):
        try:
            shapes = json.loads(path.read_text())
            return "LEAK " + json.dumps([entry["input_kwargs"] for entry in shapes.values()])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return "no shapes found"


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6, dtype: str = "bfloat16") -> None:
        super().__init__()
        raise RuntimeError(_private_shapes())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x
