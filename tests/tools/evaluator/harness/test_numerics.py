"""The correctness rule of one output, as SOL defines it, plus the harness's stricter edges."""

from __future__ import annotations

import pytest
import torch

from aka_graph.tools.evaluator.harness.numerics import MOVED_FACTOR, check_output
from aka_graph.tools.evaluator.harness.opmodel import Tolerance

TOL = Tolerance()


def test_values_within_atol_plus_rtol_pass_on_the_matched_ratio() -> None:
    ref = torch.linspace(-4, 4, 1000)
    got = ref.clone()
    got[:9] += 0.5  # 0.9 % of elements off (near misses, 10x their tolerance): 99.1 % matched >= 99 %
    v = check_output("y", got, ref, TOL)
    assert v.ok and v.max_abs == 0.5
    got[:11] += 0.1  # 1.1 % off
    v = check_output("y", got, ref, TOL)
    assert not v.ok and "98.900% of elements within" in v.message


def test_two_outputs_repeating_one_base_alike_are_judged_by_their_bases() -> None:
    """Round 18 on the H200: a reference's 17 GB stride-0 views of a few megabytes, compared whole, needed
    tens of GiB of float32 temporaries. Both repeating a base the same way, the bases give the same
    verdict: every base element stands for equally many."""
    ref_base, tol = torch.randn(4, 8, 1, 1), Tolerance(atol=1e-3, rtol=1e-3, matched_ratio=0.8)
    got_base = ref_base.clone()
    got_base[0, :3] += 5e-3  # 3 of 32 base elements near misses: 90.625% matched, whole or by bases
    huge = (4, 8, 1 << 16, 1 << 16)  # 2**37 logical elements: 512 GiB of float32 if made whole
    v = check_output("y", got_base.expand(huge), ref_base.expand(huge), tol)
    small = (4, 8, 3, 5)
    whole = check_output("y", got_base.expand(small).contiguous(), ref_base.expand(small), tol)
    assert v.ok and whole.ok and v.matched == whole.matched == 29 / 32
    assert v.max_abs == whole.max_abs and v.max_rel == whole.max_rel
    strict = Tolerance(atol=1e-3, rtol=1e-3, matched_ratio=0.95)
    assert not check_output("y", got_base.expand(huge), ref_base.expand(huge), strict).ok


def test_an_output_expanded_where_the_reference_is_not_is_compared_whole() -> None:
    """Bases only where both repeat the same dims: a constant output where the reference varies fails."""
    ref = torch.randn(4, 8, 3)
    got = ref[:, :, :1].expand(4, 8, 3)  # the first column repeated
    assert not check_output("y", got, ref, Tolerance(atol=1e-3, rtol=1e-3, matched_ratio=0.9)).ok
    assert check_output("y", ref.contiguous(), ref, Tolerance()).ok


def test_comparison_is_in_fp32_with_the_relative_term_on_the_reference() -> None:
    ref = torch.tensor([100.0, -200.0], dtype=torch.bfloat16)
    got = torch.tensor([100.5, -201.0], dtype=torch.bfloat16)  # within 1e-2 + 1e-2*|ref|
    assert check_output("y", got, ref, TOL).ok
    assert not check_output("y", got, ref, Tolerance(rtol=0.0, matched_ratio=1.0)).ok


def test_shape_and_dtype_must_match_exactly() -> None:
    ref = torch.zeros(2, 3)
    assert "shape (3, 2)" in check_output("y", torch.zeros(3, 2), ref, TOL).message
    assert (
        "dtype torch.float16" in check_output("y", torch.zeros(2, 3, dtype=torch.float16), ref, TOL).message
    )


def test_nan_and_inf_fail_unless_negative_inf_is_allowed_where_the_reference_has_it() -> None:
    ref = torch.tensor([1.0, 2.0, float("-inf")])
    nan = torch.tensor([float("nan"), 2.0, float("-inf")])
    assert "NaN" in check_output("y", nan, ref, TOL).message
    pinf = torch.tensor([float("inf"), 2.0, float("-inf")])
    assert not check_output("y", pinf, ref, TOL).ok
    assert check_output(
        "y", torch.tensor([1.0, 2.0, float("-inf")]), ref, Tolerance(allow_negative_inf=True)
    ).ok
    stray = torch.tensor([float("-inf"), 2.0, float("-inf")])
    assert not check_output("y", stray, ref, Tolerance(allow_negative_inf=True)).ok


def test_all_zeros_fail_where_the_reference_is_not_but_pass_where_it_is() -> None:
    assert "all zeros" in check_output("y", torch.zeros(8), torch.full((8,), 1e-3), TOL).message
    assert check_output("y", torch.zeros(8), torch.zeros(8), TOL).ok


def test_error_cap_rejects_one_outlier_the_ratio_would_forgive() -> None:
    ref = torch.zeros(1000) + 1
    got = ref.clone()
    got[0] = 1.25  # a near miss (12.5x its tolerance of 0.02)
    assert check_output("y", got, ref, TOL).ok
    v = check_output("y", got, ref, Tolerance(error_cap=0.1))
    assert not v.ok and "exceeds the cap" in v.message


def test_integer_and_bool_outputs_compare_exactly_enough() -> None:
    ref = torch.arange(100, dtype=torch.int32)
    assert check_output("i", ref.clone(), ref, TOL).ok
    assert not check_output("i", ref + 1, ref, TOL).ok
    b = torch.tensor([True, False] * 50)
    assert check_output("b", b.clone(), b, TOL).ok
    assert not check_output("b", ~b, b, TOL).ok


def test_a_few_scattered_flips_of_a_mask_or_ties_of_an_index_pass_on_the_ratio() -> None:
    """A bool mask taken from an fp32 accumulator flips where the reference compared a bf16-rounded value;
    an arg-max breaks an fp16 tie the other way. A miss is a whole unit there (the near-miss rule called
    one flipped bit "16x off"); the ratio and the structure still judge."""
    g = torch.Generator().manual_seed(2)
    mask = torch.rand(128, 256, generator=g) > 0.5
    flipped = mask.clone()
    flipped.view(-1)[torch.randperm(mask.numel(), generator=g)[:15]] ^= True  # 0.05 %
    assert check_output("active", flipped, mask, TOL).ok
    tokens = torch.randint(0, 32000, (2048,), generator=g)
    tied = tokens.clone()
    tied[torch.randperm(2048, generator=g)[:8]] += 517  # another index of the same logit
    assert check_output("token", tied, tokens, TOL).ok
    # the ratio and the structure still hold: 2 % flipped, or a whole row flipped, fail
    many = mask.clone()
    many.view(-1)[torch.randperm(mask.numel(), generator=g)[:700]] ^= True
    assert not check_output("active", many, mask, TOL).ok
    row = mask.clone()
    row[5] = ~row[5]
    assert "rows are mostly wrong" in check_output("active", row, mask, TOL).message


def test_a_stated_error_cap_is_how_far_a_forgiven_element_may_be_off() -> None:
    ref = _rmsnorm_like(64, 256)
    got = ref.clone()
    got[3, 7] += 0.9  # 45x its tolerance, under the cap the workload states
    assert not check_output("y", got, ref, TOL).ok
    assert check_output("y", got, ref, Tolerance(error_cap=1.0)).ok
    got[3, 7] += 0.2  # over the cap
    assert "exceeds the cap" in check_output("y", got, ref, Tolerance(error_cap=1.0)).message


# -- issue 13, class 2: the forgiven 1 % must be near misses, scattered, not skipped work ---------------


def _rmsnorm_like(rows: int, cols: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return torch.randn(rows, cols, generator=g)


def test_a_gross_outlier_fails_even_when_the_ratio_would_forgive_it() -> None:
    ref = _rmsnorm_like(64, 256)
    got = ref.clone()
    got[3, 7] += 17.0  # one element of 16384: the ratio alone would pass it
    v = check_output("y", got, ref, TOL)
    assert not v.ok and "near misses" in v.message


def test_scattered_near_misses_within_the_ratio_pass() -> None:
    ref = _rmsnorm_like(64, 256)
    got = ref.clone()
    idx = torch.randperm(ref.numel(), generator=torch.Generator().manual_seed(1))[:150]  # 0.9 %
    got.view(-1)[idx] += 0.15  # beyond atol + rtol|ref| for most, but well inside 16x
    v = check_output("y", got, ref, TOL)
    assert v.ok, v.message
    assert v.max_abs is not None and v.max_abs > 0.1


def test_never_computing_the_last_rows_fails() -> None:
    ref = _rmsnorm_like(400, 128)
    got = ref.clone()
    got[-3:] = ref[-3:] * 0.9 + 0.2  # the last 0.75 % of rows: a cheap guess, each a near miss
    v = check_output("y", got, ref, TOL)
    assert not v.ok and "rows are mostly wrong" in v.message


def test_never_computing_the_last_feature_columns_fails() -> None:
    ref = _rmsnorm_like(256, 400)
    got = ref.clone()
    got[:, -3:] = ref[:, -3:] * 0.9 + 0.2  # the last 0.75 % of features
    v = check_output("y", got, ref, TOL)
    assert not v.ok and "columns are mostly wrong" in v.message


def test_a_skipped_tail_of_one_long_row_fails() -> None:
    ref = _rmsnorm_like(1, 20000)
    got = ref.clone()
    got[0, -150:] = ref[0, -150:] * 0.9 + 0.2
    v = check_output("y", got, ref, TOL)
    assert not v.ok and "consecutive elements" in v.message


def test_gross_errors_on_skipped_rows_are_reported_as_such() -> None:
    ref = _rmsnorm_like(400, 128)
    got = ref.clone()
    got[-3:] = 0.0  # never written: error of |ref|, up to ~4
    assert not check_output("y", got, ref, TOL).ok


def test_small_references_use_the_output_scale_for_the_near_miss_bound() -> None:
    """Cancellation leaves a near-zero reference with an error of the output's scale: not gross."""
    ref = _rmsnorm_like(64, 256)
    ref[5, 5] = 1e-6
    got = ref.clone()
    got[5, 5] = 0.1  # 10000x |ref| but 5x the tolerance at the output's RMS
    assert check_output("y", got, ref, TOL).ok


def test_complex_outputs_are_compared_on_both_parts() -> None:
    """A cast of a complex output to float32 keeps the real part only: a kernel whose imaginary part is
    wrong (or a conjugate view of the right answer) would pass on it."""
    ref = torch.complex(torch.randn(32, 32), torch.randn(32, 32))
    assert check_output("out", ref.clone(), ref, Tolerance()).ok
    assert check_output("out", ref.conj(), ref.conj(), Tolerance()).ok  # a conjugate view, resolved
    wrong_imaginary = torch.complex(ref.real, torch.zeros(32, 32))
    assert not check_output("out", wrong_imaginary, ref, Tolerance()).ok
    assert not check_output("out", ref.conj(), ref, Tolerance()).ok


# -- near-ties: alternate references where the operator is unstable (neartie.py) ----------------------------

TIE_TOL = Tolerance(atol=1e-2, rtol=1e-2, matched_ratio=0.99)


def _tied_rows() -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """(kernel, reference, (plus, minus)): 200 rows of 16; row 7 is a tie the kernel broke the other way;
    the reference on inputs nudged one way broke it that way too, nudged the other way kept its own."""
    torch.manual_seed(0)
    ref = torch.randn(200, 16)
    other = torch.randn(16) * 3
    got, plus, minus = ref.clone(), ref.clone() * (1 + 1e-5), ref.clone() * (1 - 1e-5)
    got[7], plus[7] = other, other * (1 - 1e-5)
    return got, ref, (plus, minus)


def test_a_row_matching_the_reference_on_nudged_inputs_where_it_moved_passes_and_is_counted() -> None:
    got, ref, pair = _tied_rows()
    assert not check_output("out", got, ref, TIE_TOL).ok
    v = check_output("out", got, ref, TIE_TOL, [pair])
    assert v.ok, v.message
    assert v.near_ties == 16  # row 7, taken whole from the nudged reference


def test_either_sign_of_a_direction_may_hold_the_kernels_choice() -> None:
    got, ref, (plus, minus) = _tied_rows()
    assert check_output("out", got, ref, TIE_TOL, [(minus, plus)]).ok


def test_an_alternate_within_the_tolerance_of_the_reference_rescues_nothing() -> None:
    """Where the reference did not move beyond the tolerance, it alone judges: an alternate leaning toward
    a kernel's consistently sloppy values (0.9 tolerance away) must not halve their error."""
    ref = torch.ones(100, 16)
    got = ref + 0.03  # 1.5x the tolerance everywhere
    alt = ref + 0.018  # moved, but within the tolerance
    v = check_output("out", got, ref, TIE_TOL, [(alt, ref)])
    assert not v.ok and v.near_ties == 0


def test_an_alternate_moved_by_rounding_rescues_nothing() -> None:
    """A nudge of one bf16 unit moves a stable bf16 output by up to two output units, past the tolerance
    on large values: movement under MOVED_FACTOR tolerances is rounding, not a tie (the red team's
    subsampled RMS had 149 elements judged as near-ties before the factor)."""
    ref = torch.full((100, 16), 4.0)
    got = ref + 0.07  # 1.4 tolerances off everywhere: a kernel doing less work
    alt = ref + 0.07  # the reference on nudged inputs, moved by the same 1.4 tolerances
    v = check_output("out", got, ref, TIE_TOL, [(alt, ref)])
    assert not v.ok and v.near_ties == 0
    assert MOVED_FACTOR * 0.05 > 0.07  # the case sits between one and MOVED_FACTOR tolerances


def test_a_wrong_stable_row_stays_wrong_beside_a_forgiven_tie() -> None:
    got, ref, pair = _tied_rows()
    got[-1] = 0.0  # the edge bug: the last row never written, where the reference is stable
    v = check_output("out", got, ref, TIE_TOL, [pair])
    assert not v.ok and v.numeric and v.near_ties == 16  # row 7 forgiven, the last row not
    assert "elements are off by more than" in v.message


def test_a_line_takes_one_reference_whole_so_answers_no_input_has_are_refused() -> None:
    """Red team round 13 in miniature: a 1-D "sort" whose wrong pairs are each explained by some nudged
    reference, but by different ones. Mixed element by element it would pass; line by line it does not."""
    ref = torch.arange(400.0) * 3  # neighbours 3 apart: a swap moves two elements by 6 tolerances
    got = ref.clone()
    alternates = []
    for k in range(8):  # 8 misordered pairs; nudged reference k swaps pair k alone
        i = 50 * k
        got[[i, i + 1]] = ref[[i + 1, i]]
        alt = ref.clone()
        alt[[i, i + 1]] = ref[[i + 1, i]]
        alternates.append((alt, ref))
    tol = Tolerance(atol=0.5, rtol=0.0, matched_ratio=0.99)
    v = check_output("out", got, ref, tol, alternates)
    assert not v.ok and v.near_ties == 2  # one nudged reference for the line: one pair of eight explained
    rows = got.reshape(8, 50), ref.reshape(8, 50)
    per_row = [(a.reshape(8, 50), b.reshape(8, 50)) for a, b in alternates]
    assert check_output("out", *rows, tol, per_row).ok  # one pair a line: each line has its reference


def test_the_nearest_reference_folds_several_alternates_into_one() -> None:
    got, ref, pair = _tied_rows()
    got[9] = torch.randn(16) * 3  # a second tie, found by a second direction
    second = ref.clone()
    second[9] = got[9] * (1 + 1e-5)
    first = check_output("out", got, ref, TIE_TOL, [pair])
    assert not first.ok and first.nearest is not None
    folded = check_output("out", got, ref, TIE_TOL, [(second, ref)], prior=first)
    direct = check_output("out", got, ref, TIE_TOL, [pair, (second, ref)])
    assert folded.ok and direct.ok and folded.near_ties == direct.near_ties == 32


def test_a_line_keeps_the_reference_most_of_its_elements_match() -> None:
    got, ref, (plus, minus) = _tied_rows()
    far = ref.clone()
    far[7] = -got[7]  # moved too, but away from the kernel's values
    for order in ([(far, ref), (plus, minus)], [(plus, minus), (far, ref)]):
        assert check_output("out", got, ref, TIE_TOL, order).ok


def test_alternates_of_another_shape_are_ignored_and_a_failure_on_values_is_marked_numeric() -> None:
    got, ref, _ = _tied_rows()
    v = check_output("out", got, ref, TIE_TOL, [(torch.zeros(3), torch.zeros(3))])
    assert not v.ok and v.numeric and v.near_ties == 0 and v.matched > 0.9
    assert not check_output("out", got[:5], ref, TIE_TOL).numeric  # a shape mismatch: nothing to retry


def test_a_flipped_line_accepts_near_misses_of_its_nudged_reference_and_no_other_line_does() -> None:
    """The nudge that flips a tie moves the flipped line's values too (a bf16 router's gate): where the
    nudged line jumped past a near miss, the kernel's line may be a near miss of it. A line the nudge moved
    by rounding alone (under a near miss) is still held to the tolerance."""
    got, ref, (plus, minus) = _tied_rows()
    got[7] = plus[7] + 0.08  # the flipped row, 2-4 tolerances off the nudged reference (a gate shift)
    v = check_output("out", got, ref, TIE_TOL, [(plus, minus)])
    assert v.ok, v.message
    got2, ref2 = torch.ones(200, 16), torch.ones(200, 16)
    got2[7] += 0.08  # 4 tolerances off, and the nudged row moved by 0.05 only (rounding, not a jump)
    noisy = ref2.clone()
    noisy[7] += 0.05
    assert not check_output("out", got2, ref2, TIE_TOL, [(noisy, ref2)]).ok


def test_a_line_has_the_callers_width() -> None:
    """One line per element of a 1-D output where the caller says so (neartie.line_width: a greedy
    arg-max, a score per token): each flipped tie is explained by its own nudged reference, while as one
    line every tie had to flip in one nudged reference at once (red team round 14, H1)."""
    ref = torch.arange(100, dtype=torch.float32)
    got, first, second = ref.clone(), ref.clone(), ref.clone()
    got[[10, 60]] = -1.0
    first[10], second[60] = -1.0, -1.0  # each nudge flipped one of the two ties
    alternates = [(first, ref), (second, ref)]
    assert not check_output("out", got, ref, TIE_TOL, alternates).ok
    v = check_output("out", got, ref, TIE_TOL, alternates, width=1)
    assert v.ok and v.near_ties == 2, v.message


def test_the_verdict_says_whether_any_nudged_line_moved_so_a_search_on_a_stable_operator_ends() -> None:
    got, ref, pair = _tied_rows()
    assert check_output("out", got, ref, TIE_TOL, [pair]).moved
    stable = (ref * (1 + 1e-5), ref * (1 - 1e-5))  # a stable operator: nudged outputs within the tolerance
    assert not check_output("out", got, ref, TIE_TOL, [stable]).moved


@pytest.mark.parametrize("case", ["equal", "all_zero_output", "nan_output"])
def test_the_comparison_never_gathers_by_a_boolean_mask(case: str) -> None:
    """Round 17: `a[mask]` on a 2.7 GB attention-score output asked the H200 for 40.75 GiB (an int64 index
    per dimension of every element) beside the worker's timing bench. The comparison reduces under masks
    instead: no nonzero() on any path, whatever the verdict."""
    from torch.utils._python_dispatch import TorchDispatchMode

    ref = torch.randn(8, 4, 16, 16)
    got = {"equal": ref.clone(), "all_zero_output": torch.zeros_like(ref)}.get(case)
    if got is None:
        got = ref.clone()
        got[0, 0, 0, :3] = float("nan")
    seen: list[str] = []

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with Recorder():
        verdict = check_output("scores", got, ref, Tolerance())
    assert verdict.ok is (case == "equal")
    assert not [op for op in seen if "nonzero" in op or op.startswith("aten.index.Tensor")], seen
