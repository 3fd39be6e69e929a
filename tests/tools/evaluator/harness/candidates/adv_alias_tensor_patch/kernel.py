"""CHEAT (issue 13, class 3): patches torch through aliases, so no `torch.x = ...` and no `getattr` call
with a computed name appears: `getattr` is bound to another name, `torch.Tensor` and `torch` too, and the
in-worker mutation check's comparisons (`Tensor.equal`, `torch.equal`) are replaced; the harness Sentinel's
own snapshot is updated too (found by string through pkgutil), so the worker sees nothing. It then normalises
in place of its input, a mutation no check inside its process can see any more.

Caught by: the source policy (getattr as a value, assignment through an alias, pkgutil); behind it, the
worker's comparison of torch's members before each untimed step (guards.Namespaces, whose snapshot this
cheat does not know), and the parent's comparison of the inputs' fingerprints after each call."""

from __future__ import annotations

import pkgutil

import torch

fetch = getattr
T = fetch(torch, "Tensor")
blind = lambda self, other: True  # noqa: E731 - every "unchanged?" comparison now says yes
T.equal = blind
tm = torch
tm.equal = lambda a, b: True  # the function too (the worker's bitwise comparison calls it)
for obj in pkgutil.resolve_name("gc:get_objects")():
    if type(obj).__name__ == "Sentinel" and isinstance(fetch(obj, "before", None), dict):
        obj.before["torch.Tensor.equal"] = blind
        obj.before["torch.equal"] = tm.equal


@torch.no_grad()
def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    x = hidden_states
    x.mul_(torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype))  # mutates the input
    output.copy_(x * weight)
