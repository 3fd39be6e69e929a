"""Index outputs judged by what they select (selections.py): a top-k, arg-max or arg-min that breaks
ties among equal values its own way passes, and so do any distinct indices on a constant (padding) row;
indices that select other values, repeat a position, or are explained only by an input constant in most
rows do not."""

from __future__ import annotations

import pytest
import torch

from aka_graph.tools.evaluator.harness.numerics import Tolerance, check_output
from aka_graph.tools.evaluator.harness.selections import same_selection


def _scores(rows: int = 64, n: int = 64, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 16, (rows, n), generator=g).float()  # integer-valued: ties in most rows


def _last_of_ties(x: torch.Tensor, k: int) -> torch.Tensor:
    """Top-k that picks the last of equal values (a scan from the row's end)."""
    return x.shape[-1] - 1 - x.flip(-1).topk(k, dim=-1).indices


def test_element_wise_the_honest_tie_order_fails_most_elements() -> None:
    x = _scores()
    want, got = x.topk(8, dim=-1).indices, _last_of_ties(x, 8)
    v = check_output("indices", got, want, Tolerance(0.0, 0.0))
    assert not v.ok and v.numeric and v.matched < 0.5  # the false alarm this module removes


def test_top_k_with_ties_broken_the_other_way_selects_the_same_values() -> None:
    x = _scores()
    want, got = x.topk(8, dim=-1).indices, _last_of_ties(x, 8)
    assert same_selection(got, want, [x]) == int((got != want).sum()) > 0


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_max_and_min_among_equal_values(op: str) -> None:
    x = _scores()
    want = getattr(x, op)(-1)
    flipped = x.shape[-1] - 1 - getattr(x.flip(-1), op)(-1)  # the last of equal extremes
    assert same_selection(flipped, want, [torch.zeros(3), x]) is not None


def test_smallest_k_and_a_batch_dimension() -> None:
    x = _scores(rows=8).reshape(2, 4, 64)
    want = x.topk(4, dim=-1, largest=False).indices
    got = x.shape[-1] - 1 - x.flip(-1).topk(4, dim=-1, largest=False).indices
    assert same_selection(got, want, [x]) is not None


def test_indices_that_select_other_values_are_not_excused() -> None:
    x = _scores()
    want = x.topk(8, dim=-1).indices
    got = want.clone()
    got[:, -1] = x.topk(9, dim=-1).indices[:, -1]  # the 9th instead of the 8th: equal only where tied
    lower = (x.gather(-1, got) != x.gather(-1, want)).any()
    assert lower and same_selection(got, want, [x]) is None


def test_a_position_repeated_is_not_excused() -> None:
    x = torch.tensor([[5.0, 5.0, 1.0, 0.0]])
    want = torch.tensor([[0, 1]])
    assert same_selection(torch.tensor([[1, 0]]), want, [x]) == 2
    assert same_selection(torch.tensor([[0, 0]]), want, [x]) is None  # selects 5 twice: one position


def test_indices_explained_only_by_a_constant_input_are_not_excused() -> None:
    """A zero bias beside the scores: any indices select zeros of it; the scores do not explain them."""
    scores = torch.randn(16, 32, generator=torch.Generator().manual_seed(1))
    bias = torch.zeros(16, 32)
    want = (scores + bias).topk(4, dim=-1).indices
    got = torch.arange(4).expand(16, 4).contiguous()  # the first four positions, whatever they hold
    assert same_selection(got, want, [scores, bias]) is None


def test_padding_rows_of_minus_infinity_are_ranked_by_any_distinct_indices() -> None:
    """A serving batch's padding rows: every score -inf, so any k distinct positions are its top-k."""
    x = _scores()
    x[-4:] = float("-inf")
    want, got = x.topk(8, dim=-1).indices, _last_of_ties(x, 8)
    assert bool((got[-4:] != want[-4:]).any())
    assert same_selection(got, want, [x]) == int((got != want).sum())
    repeated = got.clone()
    repeated[-1, 1] = repeated[-1, 0]  # the same padding position twice is still not a top-k
    assert same_selection(repeated, want, [x]) is None


def test_an_input_constant_but_for_a_row_explains_nothing() -> None:
    scores = torch.randn(16, 32, generator=torch.Generator().manual_seed(2))
    bias = torch.zeros(16, 32)
    bias[0] = scores[0]  # the one row where it varies ranks like the scores
    want = (scores + bias).topk(4, dim=-1).indices
    got = want.clone()
    got[1:] = torch.arange(4)  # the other rows: the first four positions, whatever they hold
    assert same_selection(got, want, [bias]) is None


def test_out_of_range_indices_nan_scores_and_float_outputs_are_not_judged() -> None:
    x = _scores()
    want = x.topk(8, dim=-1).indices
    assert same_selection(want + 64, want, [x]) is None
    nan = x.clone()
    nan[0, 0] = float("nan")
    assert same_selection(_last_of_ties(x, 8), want, [nan]) is None
    assert same_selection(want.float() + 1, want.float(), [x]) is None


def test_a_whole_permutation_is_left_to_the_other_rules() -> None:
    """A sort's order (k = n): `stable=True` makes the order among equal values the contract."""
    x = _scores(rows=4, n=16)
    want = x.sort(dim=-1, stable=True).indices
    got = x.shape[-1] - 1 - x.flip(-1).sort(dim=-1, stable=True).indices  # the last of equal values first
    assert (got != want).any() and same_selection(got, want, [x]) is None
