"""The nudges that find where an operator has no right answer (neartie.py): small, antithetic, surviving
the dtype's rounding, and leaving alone what is not a float value."""

from __future__ import annotations

import pytest
import torch

from aka_graph.tools.evaluator.harness.neartie import NUDGE, line_width, nudged, part_of, parts


def _relative(after: torch.Tensor, before: torch.Tensor) -> torch.Tensor:
    return ((after.double() - before.double()) / before.double().abs()).abs()


def test_fp32_values_move_by_one_to_two_nudges_relative_and_both_signs_mirror() -> None:
    x = torch.randn(500, 7) * 3
    up, down = nudged([x], 11, 1)[0], nudged([x], 11, -1)[0]
    size = _relative(up, x)
    assert float(size.min()) >= NUDGE * 0.98 and float(size.max()) <= 2 * NUDGE * 1.02  # fp32 rounding
    assert torch.equal(torch.sign(up - x), -torch.sign(down - x))
    assert torch.equal(nudged([x], 11, 1)[0], up)  # one seed, one direction
    assert not torch.equal(nudged([x], 12, 1)[0], up)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_values_move_at_most_one_unit_two_thirds_of_them(dtype: torch.dtype) -> None:
    x = (torch.randn(3000) * 3).to(dtype)
    up = nudged([x], 5, 1)[0]
    moved = up != x
    one_unit = (up == torch.nextafter(x, torch.full_like(x, torch.inf))) | (
        up == torch.nextafter(x, torch.full_like(x, -torch.inf))
    )
    assert bool((one_unit | ~moved).all())
    assert 0.6 < float(moved.float().mean()) < 0.73  # -1, 0, +1 unit, a third each


def test_integers_booleans_fp8_python_scalars_and_non_finite_values_stay() -> None:
    ints, flags = torch.arange(10), torch.rand(10) > 0.5
    fp8 = torch.randn(10).to(torch.float8_e4m3fn)
    special = torch.tensor([float("-inf"), float("inf"), float("nan"), 1.25])
    out = nudged([ints, flags, fp8, 3.5, special], 1, 1)
    assert torch.equal(out[0], ints) and torch.equal(out[1], flags) and out[3] == 3.5
    assert torch.equal(out[2].view(torch.uint8), fp8.view(torch.uint8))
    assert torch.equal(out[4][:2], special[:2]) and bool(out[4][2].isnan()) and float(out[4][3]) != 1.25


def test_zeros_stay_and_a_tensor_of_whole_numbers_alone_is_left_as_it_is() -> None:
    """A float mask's 0 and 1, float ids and lengths mean something: nudged, `mask == 0` flipped in every
    nudged reference call (red team round 13). In a data tensor only the zeros stay."""
    mask = torch.ones(4, 32)
    mask[1, 24:] = 0.0
    ids = torch.tensor([0.0, 5.0, 17.0, float("-inf")])
    for dtype in (torch.float32, torch.bfloat16):
        for sign in (1, -1):
            out = nudged([mask.to(dtype), ids.to(dtype)], 7, sign)
            assert torch.equal(out[0], mask.to(dtype)) and torch.equal(out[1], ids.to(dtype))
    data = torch.tensor([0.0, 2.0, 0.37, -1.5])
    out = nudged([data], 7, 1)[0]
    assert out[0] == 0 and bool((out[1:] != data[1:]).all())  # 2.0 moves: it is data here
    assert parts([mask, ids, data, torch.arange(3), 1.5]) == 1


def test_a_direction_nudges_every_part_then_each_alone_in_turn() -> None:
    a, b = torch.randn(8) + 0.5, torch.randn(8) + 0.5
    assert [part_of(k, 2) for k in range(6)] == [None, 0, 1, None, 0, 1]
    both = nudged([a, b], 3, 1, part=None)
    first = nudged([a, b], 3, 1, part=0)
    second = nudged([a, b], 3, 1, part=1)
    assert not torch.equal(both[0], a) and not torch.equal(both[1], b)
    assert torch.equal(first[0], both[0]) and torch.equal(first[1], b)
    assert torch.equal(second[0], a) and torch.equal(second[1], both[1])


def test_an_expanded_input_stays_expanded_and_a_strided_one_keeps_its_layout() -> None:
    row = torch.randn(1, 6).expand(5, 6)
    out = nudged([row], 2, 1)[0]
    assert out.stride() == row.stride() and bool((out == out[0]).all())
    transposed = torch.randn(6, 4).t()
    kept = nudged([transposed], 2, 1)[0]
    assert kept.stride() == transposed.stride() and not torch.equal(kept, transposed)


def test_an_exact_fp32_tie_is_broken_one_way_by_each_sign_of_every_direction() -> None:
    """x halfway between two codes: the nudged references pick each code once per direction."""
    codes = torch.tensor([[0.7, 0.0], [-0.7, 0.0], [0.0, 5.3]])  # not whole numbers alone: those stay
    x = torch.zeros(1, 2)

    def nearest(x: torch.Tensor, codes: torch.Tensor) -> int:
        return int(torch.cdist(x, codes).argmin())

    for seed in range(50):
        picks = {nearest(*nudged([x, codes], seed, sign)) for sign in (1, -1)}
        assert picks == {0, 1}, seed


LINES = {
    # (output, inputs, width): one element per row of a 2-D input is a line of its own
    "greedy arg-max [256] of [256, 8192]": (torch.zeros(256, dtype=torch.int64), [torch.zeros(256, 8192)], 1),
    "a score per token [T] of [T, H], [E, H]": (torch.zeros(64), [torch.zeros(64, 8), torch.zeros(4, 8)], 1),
    # a 1-D output of 1-D inputs: its elements depend on each other (a sort), one line
    "a sort [N] of [N]": (torch.zeros(128), [torch.zeros(128)], None),
    "a 1-D output longer than any input's rows": (torch.zeros(512), [torch.zeros(64, 8)], None),
    # 2-D and more: the output's own last dim, as before
    "rows [T, H]": (torch.zeros(64, 8), [torch.zeros(64, 8)], None),
    "a complex 1-D output (real and imaginary parts stay together)": (
        torch.zeros(64, dtype=torch.complex64),
        [torch.zeros(64, 8)],
        None,
    ),
}


@pytest.mark.parametrize("case", LINES)
def test_the_lines_a_nudged_reference_replaces_whole(case: str) -> None:
    output, inputs, width = LINES[case]
    assert line_width(output, inputs) == width

