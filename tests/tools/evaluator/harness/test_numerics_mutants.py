"""The correctness rule and the bit-equality check at their exact boundaries: each test names the mutation
it exists to catch (scripts/mutation_test.py runs this file against every mutant of numerics.py and of
runner.same_bits). The worker's keep-alive of earlier seeds' inputs is checked in-process on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from aka_graph.tools.evaluator.harness.numerics import check_output
from aka_graph.tools.evaluator.harness.opmodel import Tolerance
from aka_graph.tools.evaluator.harness.runner import same_bits

TOL = Tolerance()
INF, NAN = float("inf"), float("nan")


# -- same_bits: behind "input modified" and "outputs changed late" --------------------------------------


@pytest.mark.parametrize("where", [0, 1, 500, -1])
def test_same_bits_sees_a_change_anywhere_not_only_in_the_first_element(where: int) -> None:
    """Kills same_bits reduced to the first element (or the first byte)."""
    a = torch.arange(1000, dtype=torch.float32)
    b = a.clone()
    b[where] += 1.0
    assert not same_bits(a, b)
    assert same_bits(a, a.clone())


def test_same_bits_compares_every_byte_of_wide_elements() -> None:
    a = torch.zeros(4, dtype=torch.float64)
    b = a.clone()
    b.view(torch.uint8)[-1] = 1  # the last byte of the last element
    assert not same_bits(a, b)


def test_same_bits_is_nan_safe_and_sign_exact() -> None:
    a = torch.tensor([NAN, 1.0, -0.0])
    assert same_bits(a, a.clone())  # NaN != NaN numerically, but the bits agree
    assert not same_bits(torch.tensor([0.0]), torch.tensor([-0.0]))  # numerically equal, bits differ


def test_same_bits_handles_strided_and_empty_tensors_and_rejects_shape_or_dtype_changes() -> None:
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert same_bits(base.t(), base.t().contiguous())
    changed = base.t().contiguous()
    changed[3, 2] = -1.0
    assert not same_bits(base.t(), changed)
    assert same_bits(torch.empty(0), torch.empty(0))
    assert not same_bits(torch.zeros(4), torch.zeros(2, 2))
    assert not same_bits(torch.zeros(4), torch.zeros(5))
    assert not same_bits(torch.zeros(4), torch.zeros(4, dtype=torch.int32))  # same bits, other dtype
    assert not same_bits(torch.zeros(0), torch.zeros(0, dtype=torch.int32))


# -- non-finite values ------------------------------------------------------------------------------------


@pytest.mark.parametrize("ref_value", [-INF, INF, NAN])
def test_a_finite_output_where_the_reference_is_not_finite_fails(ref_value: float) -> None:
    """Kills the removed check that the output keeps the reference's -inf/+inf/NaN."""
    ref = torch.tensor([1.0, 2.0, ref_value, 4.0])
    got = torch.tensor([1.0, 2.0, 3.0, 4.0])
    for tol in (TOL, Tolerance(allow_negative_inf=True), Tolerance(matched_ratio=0.5)):
        v = check_output("y", got, ref, tol)
        assert not v.ok and "non-finite values the output lacks" in v.message


@pytest.mark.parametrize("value", [-INF, INF, NAN])
def test_matching_non_finite_values_pass(value: float) -> None:
    ref = torch.tensor([1.0, value, 3.0])
    v = check_output("y", ref.clone(), ref, TOL)
    assert v.ok, v.message
    assert v.max_abs == 0.0 and v.max_rel == 0.0


def test_negative_inf_passes_only_when_allowed_and_only_where_the_reference_has_it() -> None:
    ref = torch.tensor([1.0, -INF, 3.0])
    assert check_output("y", torch.tensor([1.0, -INF, 3.0]), ref, Tolerance(allow_negative_inf=True)).ok
    wrong_sign = check_output("y", torch.tensor([1.0, INF, 3.0]), ref, Tolerance(allow_negative_inf=True))
    assert not wrong_sign.ok and "1 non-finite values (0 NaN)" in wrong_sign.message
    nan = check_output("y", torch.tensor([NAN, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0]), TOL)
    assert not nan.ok and "1 non-finite values (1 NaN)" in nan.message


# -- rtol on the reference, the matched ratio, all zeros ---------------------------------------------------


def test_relative_tolerance_scales_with_the_reference_not_the_output() -> None:
    """Kills `rtol * |got|`: 9.05 vs 10 is within 0.1*|ref| = 1.0 but not within 0.1*|got| = 0.905;
    11.05 vs 10 is outside 1.0 but inside 0.1*|got| = 1.105."""
    tol = Tolerance(atol=0.0, rtol=0.1, matched_ratio=1.0)
    ref = torch.tensor([10.0])
    assert check_output("y", torch.tensor([9.05]), ref, tol).ok
    assert not check_output("y", torch.tensor([11.05]), ref, tol).ok


def test_atol_and_rtol_add_up() -> None:
    tol = Tolerance(atol=0.5, rtol=0.25, matched_ratio=1.0)  # bound at ref 4: 0.5 + 1.0 = 1.5 (exact)
    ref = torch.tensor([4.0])
    assert check_output("y", torch.tensor([5.5]), ref, tol).ok  # exactly on the bound: passes (<=)
    assert not check_output("y", torch.tensor([5.5001]), ref, tol).ok
    assert not check_output(
        "y", torch.tensor([5.5]), ref, Tolerance(atol=0.5, rtol=0.0, matched_ratio=1.0)
    ).ok
    assert not check_output(
        "y", torch.tensor([5.5]), ref, Tolerance(atol=0.0, rtol=0.25, matched_ratio=1.0)
    ).ok


@pytest.mark.parametrize(("misses", "ok"), [(0, True), (1, True), (2, False)])
def test_matched_ratio_boundary_is_inclusive(misses: int, ok: bool) -> None:
    """Kills `ratio < matched_ratio` -> `<=`: 3 of 4 matched is exactly 0.75 (exact in binary)."""
    ref = torch.ones(4)
    got = ref.clone()
    got[:misses] = 1.05  # off by 0.05 > 0.02, a near miss (under 16x)
    v = check_output("y", got, ref, Tolerance(matched_ratio=0.75))
    assert v.ok is ok, v.message
    if not ok:
        assert "50.000% of elements within" in v.message


def test_reported_errors_are_the_largest_absolute_and_relative_ones() -> None:
    ref = torch.tensor([1.0, 100.0, 2.0, 4.0])
    got = torch.tensor([1.001, 100.5, 2.0, 4.01])
    v = check_output("y", got, ref, TOL)
    assert v.ok
    assert v.max_abs == pytest.approx(0.5, rel=1e-5)
    assert v.max_rel == pytest.approx(0.005, rel=1e-3)  # 0.5/100 and 0.01/4 = 0.0025: the largest wins


def test_errors_at_non_finite_positions_are_not_counted() -> None:
    ref = torch.tensor([1.0, -INF, 3.0])
    v = check_output("y", torch.tensor([1.0, -INF, 3.0]), ref, Tolerance(allow_negative_inf=True))
    assert v.ok and v.max_abs == 0.0 and v.max_rel == 0.0


def test_an_honest_output_with_some_zeros_passes() -> None:
    """Kills the all-zero check using any(): zeros where the reference has them are honest."""
    ref = torch.tensor([0.0, 1.0, 2.0, 0.0, 3.0])
    v = check_output("y", ref.clone(), ref, TOL)
    assert v.ok, v.message


def test_all_zeros_fail_with_their_own_message_where_the_reference_is_partly_zero() -> None:
    ref = torch.tensor([0.0, 1.0, 2.0, 3.0] * 25)
    v = check_output("y", torch.zeros(100), ref, Tolerance(matched_ratio=0.0))
    assert not v.ok and "all zeros where the reference is not" in v.message


def test_all_zeros_over_the_finite_part_fail_even_beside_matching_infinities() -> None:
    ref = torch.tensor([-INF, 1.0, 2.0])
    v = check_output(
        "y", torch.tensor([-INF, 0.0, 0.0]), ref, Tolerance(allow_negative_inf=True, matched_ratio=0)
    )
    assert not v.ok and "all zeros" in v.message


def test_a_tiny_all_zero_reference_still_requires_nothing_but_zeros() -> None:
    ref = torch.zeros(3)
    assert check_output("y", torch.zeros(3), ref, TOL).ok
    assert not check_output("y", torch.tensor([0.0, 0.5, 0.0]), ref, Tolerance(matched_ratio=1.0)).ok


def test_error_cap_is_inclusive() -> None:
    ref = torch.ones(200)
    got = ref.clone()
    got[0] = 1.25  # exactly 0.25 off (exact in binary), a near miss
    assert check_output("y", got, ref, Tolerance(error_cap=0.25)).ok
    assert not check_output("y", got, ref, Tolerance(error_cap=0.2)).ok


def test_empty_outputs_pass_and_dtype_is_checked_before_values() -> None:
    v = check_output("y", torch.empty(0, 3), torch.empty(0, 3), TOL)
    assert v.ok and v.max_abs == 0.0
    bad = check_output("y", torch.ones(2, dtype=torch.float16), torch.ones(2), TOL)
    assert not bad.ok and bad.max_abs is None


def test_low_precision_is_compared_in_fp32() -> None:
    """bf16 1.0 + 1 ulp (2^-7) vs 1.0: 0.0078 <= 0.01 + 0.01 passes, in any dtype the compare is done in."""
    ref = torch.ones(8, dtype=torch.bfloat16)
    got = ref + torch.tensor(2.0**-7, dtype=torch.bfloat16)
    assert check_output("y", got, ref, Tolerance(matched_ratio=1.0)).ok


# -- the worker keeps every seed's inputs alive (pointer-reuse defence) -----------------------------------

POINTER_SPY = """
import torch
_PTRS = {path!r}

def run(hidden_states, weight, output):
    with open(_PTRS, "a") as f:
        f.write(f"{{hidden_states.data_ptr()}} {{weight.data_ptr()}}\\n")
    x = hidden_states.float()
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * weight.float()
    output.copy_(y.to(output.dtype))
"""


def test_each_seed_gets_inputs_at_fresh_addresses(tmp_path: Path, sol_fixtures: Path) -> None:
    """Kills dropping the keep-alive of earlier seeds' inputs: with it gone, a later seed's tensors reuse a
    freed earlier seed's memory and a cache keyed on data_ptr() answers from the earlier call. (Kept while
    the seeds' inputs are small, memory.plan_memory; large ones are freed seed by seed, issue 9.)"""
    from aka_graph.tools.evaluator.harness.loading import load_operator
    from aka_graph.tools.evaluator.harness.worker import Worker

    ptrs = tmp_path / "ptrs.txt"
    kdir = tmp_path / "kernel"
    kdir.mkdir()
    (kdir / "kernel.py").write_text(POINTER_SPY.format(path=str(ptrs)))
    op = load_operator(sol_fixtures / "rmsnorm")
    worker = Worker(op.directory, kdir, torch.device("cpu"))
    assert "error" not in worker.load({})
    idx = min(range(len(op.workloads)), key=lambda i: sum(op.workloads[i].axes.values()))
    reply = worker.run({"wl": idx, "seeds": [[seed, 1.0, None] for seed in range(6)]})
    assert "error" not in reply and reply["violations"] == [], reply
    calls = [tuple(int(p) for p in line.split()) for line in ptrs.read_text().splitlines()]
    assert len(calls) == 6
    addresses = [p for call in calls for p in call]
    assert len(set(addresses)) == len(addresses), "a seed's input reused an earlier seed's memory"


# -- the near-miss bound and the structural-omission boundaries (issue 13, class 2) -------------------


def _near_misses(shape: tuple[int, ...], where: tuple[slice, ...] | tuple[int | slice, ...]) -> torch.Tensor:
    got = torch.ones(shape)
    got[where] = 1.05  # 0.05 off with tolerance 0.02: a miss, but well within 16x (a near miss)
    return got


def test_a_miss_of_exactly_the_near_miss_bound_is_forgiven_and_beyond_it_is_not() -> None:
    """16 x atol 0.5 = 8.0 exactly (rtol 0): kills `diff > allowed` -> `>=` and a changed factor."""
    tol = Tolerance(atol=0.5, rtol=0.0)
    ref = torch.ones(200)
    got = ref.clone()
    got[7] = 9.0
    assert check_output("y", got, ref, tol).ok
    got[7] = 9.001
    v = check_output("y", got, ref, tol)
    assert not v.ok and "near misses" in v.message


def test_a_row_of_exactly_the_minimum_line_length_is_checked() -> None:
    """[2000, 16]: one row wrong is 0.05 % of elements; 16 columns is the shortest row that counts."""
    v = check_output("y", _near_misses((2000, 16), (5, slice(None))), torch.ones(2000, 16), TOL)
    assert not v.ok and "rows are mostly wrong" in v.message
    short = check_output("y", _near_misses((2000, 15), (5, slice(None))), torch.ones(2000, 15), TOL)
    assert short.ok, short.message  # 15 consecutive misses: shorter than a line, far below half a window


@pytest.mark.parametrize("wrong", [8, 9])
def test_half_a_row_wrong_is_mostly_wrong(wrong: int) -> None:
    """Kills the row share `>=` -> `>` (8 of 16 is exactly half)."""
    v = check_output("y", _near_misses((2000, 16), (5, slice(0, wrong))), torch.ones(2000, 16), TOL)
    assert not v.ok and "rows are mostly wrong" in v.message
    assert check_output("y", _near_misses((2000, 16), (5, slice(0, 7))), torch.ones(2000, 16), TOL).ok


def test_half_a_column_wrong_is_mostly_wrong() -> None:
    """Kills the column share `>=` -> `>`: 8 of a column's 16 rows, 2000 elements apart in memory."""
    v = check_output("y", _near_misses((16, 2000), (slice(0, 8), 3)), torch.ones(16, 2000), TOL)
    assert not v.ok and "columns are mostly wrong" in v.message
    assert check_output("y", _near_misses((16, 2000), (slice(0, 7), 3)), torch.ones(16, 2000), TOL).ok


def test_half_a_window_of_consecutive_misses_is_a_skipped_block() -> None:
    """64 consecutive misses in a 1-D output (0.64 %): exactly half of a 128-element window."""
    v = check_output("y", _near_misses((10000,), (slice(5000, 5064),)), torch.ones(10000), TOL)
    assert not v.ok and "64 of 128 consecutive elements" in v.message
    ok = check_output("y", _near_misses((10000,), (slice(5000, 5063),)), torch.ones(10000), TOL)
    assert ok.ok, ok.message


def test_outputs_of_three_dimensions_are_checked_as_rows_and_features() -> None:
    """The last feature never computed in a [8, 50, 128] output: 0.78 % of elements, one column."""
    v = check_output("y", _near_misses((8, 50, 128), (Ellipsis, 127)), torch.ones(8, 50, 128), TOL)
    assert not v.ok and "columns are mostly wrong" in v.message


def test_shape_and_dtype_mismatches_fail() -> None:
    """The message alone is not the verdict: both must come back not ok, with no error numbers."""
    for got in (torch.zeros(3, 2), torch.zeros(2, 3, dtype=torch.float16)):
        v = check_output("y", got, torch.zeros(2, 3), TOL)
        assert not v.ok and v.max_abs is None and v.max_rel is None


def test_empty_outputs_report_zero_errors() -> None:
    v = check_output("y", torch.empty(0), torch.empty(0), TOL)
    assert (v.ok, v.max_abs, v.max_rel, v.message) == (True, 0.0, 0.0, "")


def test_the_ratio_message_names_the_required_share() -> None:
    ref = torch.ones(4)
    v = check_output("y", _near_misses((4,), (slice(0, 2),)), ref, Tolerance(matched_ratio=0.75))
    assert "need 75% (max abs error 0.05)" in v.message


def test_a_window_check_covers_an_output_of_exactly_one_window() -> None:
    """128 elements, the last 64 missed: a skipped tail even where a lax ratio (50 %) forgives them."""
    got = _near_misses((128,), (slice(64, None),))
    v = check_output("y", got, torch.ones(128), Tolerance(matched_ratio=0.5))
    assert not v.ok and "64 of 128 consecutive elements" in v.message
