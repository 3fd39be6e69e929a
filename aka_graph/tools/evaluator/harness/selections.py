"""Index outputs judged by what they select: top-k positions, arg-max and arg-min among equal values.

torch.topk, argmax and sort leave the order among equal values unspecified, and kernels break such ties
their own way (a scan from the row's end picks the last of equal scores). On integer-valued or low-
precision scores most rows hold ties, so an honest top-k's indices can differ from the reference's in
most elements while selecting exactly the same values: the element-wise rule called it INCORRECT, and
the near-tie rule cannot help (whole numbers are not nudged; red team 13's false alarm).

Here an integer output that fails the element-wise rule is judged again by selection: it passes when
some input of the call is what the reference's indices rank (along the last dimension, the reference's
selected values are that row's k largest or k smallest), every index the kernel returns selects exactly
the value the reference's index at the same place selects, the kernel's indices are distinct in a row
wherever the reference's are, and most of that input's rows hold at least two distinct values. A
constant row (a padding row of -inf scores) is ranked by any distinct indices, so it is excused where the
input varies elsewhere; an input constant in most rows (a zero bias beside the scores) explains nothing.
Whatever else the kernel returns (the values, weights gathered by those indices) is judged on its own.

A selection of every element (a sort's permutation, k = n) is not judged here: `sort(stable=True)`
makes the order among equal values part of the contract, and the near-tie rule already judges a
floating-point sort's ties.
"""

from __future__ import annotations

from typing import Any

import torch


def _distinct_rows(idx: torch.Tensor) -> torch.Tensor:
    """Per row (all but the last dimension): whether its indices are pairwise distinct."""
    if idx.shape[-1] < 2:
        return torch.ones(idx.shape[:-1], dtype=torch.bool)
    s = idx.sort(-1).values
    return (s[..., 1:] != s[..., :-1]).all(-1)


def _ranked(x: torch.Tensor, want: torch.Tensor) -> bool:
    """Whether the values `want` selects are, row by row, the k largest or the k smallest of `x`."""
    k = want.shape[-1]
    chosen = x.gather(-1, want).sort(-1, descending=True).values
    largest = x.topk(k, dim=-1, largest=True, sorted=True).values
    smallest = x.topk(k, dim=-1, largest=False, sorted=True).values.flip(-1)
    return bool(torch.equal(chosen, largest) or torch.equal(chosen, smallest))


def same_selection(got: torch.Tensor, want: torch.Tensor, inputs: list[Any]) -> int | None:
    """How many of `got`'s indices differ from the reference's `want` while selecting the same values of
    an input the reference ranks (see the module docstring), or None where no input explains them."""
    if got.shape != want.shape or got.dtype != want.dtype or got.dtype.is_floating_point or got.numel() == 0:
        return None
    if got.dtype in (torch.bool, torch.complex64, torch.complex128):
        return None
    g, w = got.detach().cpu().long(), want.detach().cpu().long()
    differ = g != w
    if not bool(differ.any()):
        return None
    for value in inputs:
        if not isinstance(value, torch.Tensor) or value.dtype == torch.bool or value.is_complex():
            continue
        x = value.detach().cpu()
        gg, ww = g, w
        if x.dim() == g.dim() + 1 and tuple(x.shape[:-1]) == tuple(g.shape):  # arg-max / arg-min
            gg, ww = g.unsqueeze(-1), w.unsqueeze(-1)
        elif not (x.dim() == g.dim() and g.dim() >= 1 and tuple(x.shape[:-1]) == tuple(g.shape[:-1])):
            continue
        n = x.shape[-1]
        if gg.shape[-1] >= n or bool(((gg < 0) | (gg >= n) | (ww < 0) | (ww >= n)).any()):
            continue
        if not x.dtype.is_floating_point:
            x = x.double()
        if bool(torch.isnan(x).any()) or not _ranked(x, ww):
            continue
        if not torch.equal(x.gather(-1, gg), x.gather(-1, ww)):
            continue
        # a constant row (all -inf padding) is ranked by any distinct indices, honestly; but an input
        # explains the reference's indices only where most of its rows vary: a zero bias beside the
        # scores, or one constant but for a row, would excuse any indices at all
        varied = x.amax(-1) != x.amin(-1)
        if 2 * int(varied.sum()) < varied.numel():
            continue
        if not bool((_distinct_rows(gg) | ~_distinct_rows(ww)).all()):
            continue
        return int(differ.sum())
    return None
