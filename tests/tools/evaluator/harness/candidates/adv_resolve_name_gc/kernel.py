"""CHEAT (issue 13, class 3): `pkgutil.resolve_name("gc:get_objects")` imports by string, so neither
`gc` nor `get_objects` is named in an import; it then finds the harness's Sentinel among all objects and
switches off its check.

Caught by: the source policy (pkgutil is banned)."""

from __future__ import annotations

import pkgutil

import torch

objects = pkgutil.resolve_name("gc:get_objects")
for obj in objects():
    if type(obj).__name__ == "Sentinel":
        obj.before = {}


@torch.no_grad()
def run(hidden_states: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
        output: torch.Tensor) -> None:
    output.zero_()
