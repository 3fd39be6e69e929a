"""Tensor layouts the harness must not blow up: an expanded (broadcast) tensor repeats its compact base
with stride 0, and its logical size can be thousands of times its memory (round 18 on the H200: a Mamba2
discretisation returned 17 GB stride-0 views of a few megabytes). Copies, transfers and comparisons work
on the base and expand again, never on the materialized tensor.

Torch only (the protocol imports it in the worker before anything else).
"""

from __future__ import annotations

from typing import Any

import torch


def expanded_dims(t: torch.Tensor) -> list[int]:
    """Dimensions an expanded (broadcast) tensor repeats with stride 0."""
    return [d for d in range(t.dim()) if t.stride(d) == 0 and t.shape[d] > 1]


def writable(t: Any) -> Any:
    """The part of `t` that may be written: an expanded tensor's compact base (index 0 of every stride-0
    dimension: its own memory, once), else `t` itself. Writing an expanded tensor directly fails
    ("more than one element of the written-to tensor refers to a single memory location")."""
    if not isinstance(t, torch.Tensor):
        return t
    dims = expanded_dims(t)
    if not dims:
        return t
    return t[tuple(slice(0, 1) if d in dims else slice(None) for d in range(t.dim()))]


def clone_like(t: torch.Tensor) -> torch.Tensor:
    """A copy with the same layout class: an expanded tensor is copied as its base and expanded again."""
    base = writable(t)
    return t.clone() if base is t else base.clone().expand(t.shape)


def clone_values(values: list[Any]) -> list[Any]:
    return [clone_like(v) if isinstance(v, torch.Tensor) else v for v in values]


def value_bytes(values: list[Any]) -> int:
    """Bytes a copy of `values` takes (an expanded tensor takes only its compact base)."""
    return sum(
        writable(v).numel() * v.element_size() for v in values if isinstance(v, torch.Tensor) and v.numel()
    )
