"""The verdict's statistics pinned to independently computed numbers, so that a wrong formula fails a test.

Each test names the mutation it exists to catch (scripts/mutation_test.py runs them against every mutant of
verdict.py). Expected values come from closed forms, not from the module: for df = 2 Student's t has
P(T > t) = (1 - t / sqrt(2 + t^2)) / 2, and for df = 1 P(T > t) = 1/2 - atan(t)/pi.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest

from aka_graph.tools.records.verdict import ALPHA, _reg_inc_beta, decide, per_repeat_ratios, student_t_sf


@dataclass
class Round:
    label: str
    repeat: int
    position: int
    latency_us: dict[str, float] = field(default_factory=dict)


def abba(inc: list[dict[str, float]], cand: list[dict[str, float]]) -> list[Round]:
    rounds = []
    for r, (a, b) in enumerate(zip(inc, cand, strict=True)):
        for pos, (label, lat) in enumerate((("A", a), ("B", b), ("B", b), ("A", a))):
            rounds.append(Round(label, r, pos, dict(lat)))
    return rounds


SAME = {"A": "cuda_graph", "B": "cuda_graph"}


def verdict(rounds: list[Round], **kw: object):
    args: dict[str, object] = dict(min_improvement_pct=1.0, regression_guard_pct=5.0, timing_methods=SAME)
    args.update(kw)
    return decide(rounds, incumbent="A", candidate="B", **args)  # type: ignore[arg-type]


def t_sf_df2(t: float) -> float:
    return 0.5 * (1.0 - t / math.sqrt(2.0 + t * t))


def t_for_df2_tail(p: float) -> float:
    """The t whose df=2 upper tail is p (inverse of t_sf_df2)."""
    c = 1.0 - 2.0 * p
    return c * math.sqrt(2.0 / (1.0 - c * c))


def three_repeats_with_t(t: float, spread: float = 0.01) -> list[Round]:
    """Log ratios limit - m + (-d, 0, d): sample sd = d, so t = -sqrt(3) m / d exactly (df = 2)."""
    limit = math.log(0.99)
    m = t * spread / math.sqrt(3.0)
    logs = [limit - m - spread, limit - m, limit - m + spread]
    return abba([{"w": 100.0}] * 3, [{"w": 100.0 * math.exp(x)} for x in logs])


def test_p_value_is_students_t_with_sample_sd_and_n_minus_1_degrees_of_freedom() -> None:
    """Kills: df n instead of n-1, population instead of sample sd, sqrt(n) dropped or changed."""
    t = t_for_df2_tail(0.03)
    v = verdict(three_repeats_with_t(t))
    assert v.t_stat == pytest.approx(-t, rel=1e-6)
    assert v.p_value == pytest.approx(0.03, abs=1e-6)
    assert v.promote, v.reason


@pytest.mark.parametrize(("p", "promote"), [(0.045, True), (0.055, False), (0.09, False), (0.1, False)])
def test_significance_level_is_five_percent(p: float, promote: bool) -> None:
    """Kills: ALPHA raised (0.1, 0.21) and the `p >= ALPHA` comparison turned around."""
    v = verdict(three_repeats_with_t(t_for_df2_tail(p)))
    assert v.p_value == pytest.approx(p, abs=1e-6)
    assert v.promote is promote, v.reason
    if not promote:
        assert "not significant" in v.reason
    assert ALPHA == 0.05


@pytest.mark.parametrize(("t", "df"), [(0.5, 1), (3.0, 1), (12.0, 1), (0.3, 2), (2.5, 2), (40.0, 2)])
def test_student_t_tail_matches_the_closed_forms(t: float, df: int) -> None:
    """Kills mutants of the incomplete beta (continued fraction and its symmetric branch)."""
    expected = 0.5 - math.atan(t) / math.pi if df == 1 else t_sf_df2(t)
    assert student_t_sf(t, df) == pytest.approx(expected, rel=1e-9, abs=1e-15)
    assert student_t_sf(-t, df) == pytest.approx(1.0 - expected, rel=1e-9)


@pytest.mark.parametrize(
    ("a", "b", "x", "expected"),
    [
        (1.0, 1.0, 0.3, 0.3),  # uniform
        (2.0, 1.0, 0.6, 0.36),  # x^a
        (1.0, 3.0, 0.2, 1 - 0.8**3),  # 1 - (1-x)^b
        (2.0, 2.0, 0.25, 3 * 0.25**2 - 2 * 0.25**3),
        (2.0, 2.0, 0.9, 3 * 0.9**2 - 2 * 0.9**3),
        (0.5, 0.5, 0.5, 0.5),
        (3.0, 0.5, 0.0, 0.0),
        (3.0, 0.5, 1.0, 1.0),
        (3.0, 0.5, -0.1, 0.0),
        (3.0, 0.5, 1.5, 1.0),
    ],
)
def test_regularised_incomplete_beta_matches_closed_forms(
    a: float, b: float, x: float, expected: float
) -> None:
    assert _reg_inc_beta(a, b, x) == pytest.approx(expected, rel=1e-10, abs=1e-14)


def test_large_degrees_of_freedom_approach_the_normal_tail() -> None:
    """Many iterations of the continued fraction (a mutated recurrence diverges here)."""
    assert student_t_sf(1.959963984540054, 100000) == pytest.approx(0.025, abs=2e-6)
    assert student_t_sf(1.0, 30) == pytest.approx(0.16265, abs=1e-5)


def _two_shapes(small: list[float], big: float = 0.5) -> list[Round]:
    """Shape `big` wins by `big` in every repeat; shape `small` has the given per-repeat ratios."""
    inc = [{"big": 100.0, "small": 8.0}] * len(small)
    cand = [{"big": 100.0 * big, "small": 8.0 * r} for r in small]
    return abba(inc, cand)


def test_guard_uses_the_median_of_an_even_number_of_repeats() -> None:
    """Kills: median replaced by the upper middle value, by min or by max."""
    v = verdict(_two_shapes([1.0, 1.08]))
    assert v.worst_shape == "small"
    assert v.worst_shape_regression_pct == pytest.approx(4.0, abs=1e-9)
    assert v.promote, v.reason
    low = verdict(_two_shapes([1.04, 1.08]))
    assert low.worst_shape_regression_pct == pytest.approx(6.0, abs=1e-9)
    assert not low.promote and "guard" in low.reason


def test_guard_uses_the_median_of_an_odd_number_of_repeats() -> None:
    v = verdict(_two_shapes([1.2, 1.0, 1.04]))
    assert v.worst_shape_regression_pct == pytest.approx(4.0, abs=1e-9)
    assert v.promote, v.reason
    w = verdict(_two_shapes([1.0, 1.06, 1.2]))
    assert w.worst_shape_regression_pct == pytest.approx(6.0, abs=1e-9)
    assert not w.promote and "guard" in w.reason


def test_worst_shape_is_the_largest_regression_not_the_first() -> None:
    inc = [{"a": 8.0, "b": 8.0, "c": 100.0}] * 2
    cand = [{"a": 8.0 * 1.02, "b": 8.0 * 1.04, "c": 50.0}] * 2
    v = verdict(abba(inc, cand))
    assert v.worst_shape == "b" and v.worst_shape_regression_pct == pytest.approx(4.0, abs=1e-9)


def test_regression_exactly_at_the_guard_is_allowed_and_just_beyond_it_is_not() -> None:
    """Kills `worst > guard` -> `>=`: 5/4 is exact in binary, so the regression is exactly 25.0 %."""
    rounds = abba([{"big": 100.0, "small": 4.0}] * 2, [{"big": 40.0, "small": 5.0}] * 2)
    at = verdict(rounds, regression_guard_pct=25.0)
    assert at.worst_shape_regression_pct == 25.0
    assert at.promote, at.reason
    below = verdict(rounds, regression_guard_pct=24.99)
    assert not below.promote and "guard" in below.reason


@pytest.mark.parametrize(
    "methods",
    [
        {},
        {"A": "cuda_graph", "B": "cuda_event"},
        {"A": "cuda_graph", "B": "host"},
        {"A": "cuda_graph", "B": "cuda_graph", "C": "host"},
    ],
)
def test_anything_but_one_timing_method_is_refused(methods: dict[str, str]) -> None:
    """Kills a weakened timing-method check (`!= 1` -> `> 1` lets an unknown method through)."""
    v = verdict(abba([{"w": 100.0}] * 2, [{"w": 50.0}] * 2), timing_methods=methods)
    assert not v.promote and v.reason.startswith("refused: different timing methods")
    assert v.improvement_pct is None and v.p_value is None


def test_one_method_is_accepted_and_reported() -> None:
    v = verdict(abba([{"w": 100.0}] * 2, [{"w": 50.0}] * 2), timing_methods={"A": "host", "B": "host"})
    assert v.promote and v.timing_method == "host"


def test_no_paired_measurements_are_refused() -> None:
    rounds = [Round("A", 0, 0, {"w": 100.0}), Round("B", 0, 1, {"x": 50.0})]
    v = verdict(rounds)
    assert not v.promote and v.reason == "refused: no paired measurements" and v.repeats == 0


def test_improvement_equal_to_the_threshold_is_not_enough() -> None:
    """`improvement <= threshold` is the rule: ratio 0.875 (exact) is a 12.5 % improvement."""
    rounds = abba([{"w": 8.0}] * 2, [{"w": 7.0}] * 2)
    at = verdict(rounds, min_improvement_pct=12.5)
    assert at.improvement_pct == pytest.approx(12.5, abs=1e-12)
    assert not at.promote and "not > 12.50%" in at.reason
    assert verdict(rounds, min_improvement_pct=12.4).promote


def test_improvement_and_ratios_are_geometric_means() -> None:
    inc = [{"a": 100.0, "b": 10.0}] * 2
    cand = [{"a": 50.0, "b": 20.0}, {"a": 25.0, "b": 10.0}]
    v = verdict(abba(inc, cand), regression_guard_pct=1000.0)
    assert v.per_repeat_ratio == pytest.approx([1.0, 0.5])
    assert v.improvement_pct == pytest.approx((1 - math.sqrt(0.5)) * 100)


def test_ratio_averages_repeated_blocks_and_ignores_unpaired_workloads() -> None:
    rounds = [
        Round("A", 0, 0, {"w": 100.0, "only_a": 5.0}),
        Round("B", 0, 1, {"w": 60.0, "only_b": 1.0}),
        Round("B", 0, 2, {"w": 80.0}),
        Round("A", 0, 3, {"w": 60.0}),
        Round("A", 1, 0, {"w": 10.0}),
        Round("B", 1, 1, {"w": 5.0}),
    ]
    geo, per_shape = per_repeat_ratios(rounds, "A", "B")
    assert geo == pytest.approx([70.0 / 80.0, 0.5])
    assert per_shape == {"w": pytest.approx([70.0 / 80.0, 0.5])}


def test_zero_spread_decides_by_the_side_of_the_limit() -> None:
    win = verdict(abba([{"w": 100.0}] * 3, [{"w": 90.0}] * 3))
    assert win.promote and win.t_stat == -math.inf and win.p_value == 0.0
    flat = verdict(abba([{"w": 100.0}] * 3, [{"w": 100.0}] * 3), mode="parity", parity_pct=5.0)
    assert flat.promote and flat.p_value == 0.0


def test_parity_threshold_is_negative_parity_pct() -> None:
    rounds = abba([{"w": 100.0}] * 2, [{"w": 104.0}, {"w": 104.1}])
    v = verdict(rounds, mode="parity", parity_pct=5.0)
    assert v.min_improvement_pct == -5.0 and v.mode == "parity" and v.promote
    assert "(parity)" in v.reason
    assert not verdict(rounds, mode="parity", parity_pct=3.0).promote


def test_every_repeat_must_clear_the_threshold_even_when_significant_on_average() -> None:
    limit = math.log(0.99)
    # three repeats, the last exactly at the limit: the mean clears it, that repeat does not
    rounds = abba([{"w": 100.0}] * 3, [{"w": 100.0 * math.exp(x)} for x in (limit - 0.2, limit - 0.2, limit)])
    v = verdict(rounds)
    assert not v.promote and "not every repeat" in v.reason


def test_parity_defaults_to_five_percent() -> None:
    rounds = abba([{"w": 100.0}] * 2, [{"w": 104.0}, {"w": 104.1}])
    v = decide(
        rounds,
        incumbent="A",
        candidate="B",
        timing_methods=SAME,
        min_improvement_pct=1.0,
        regression_guard_pct=5.0,
        mode="parity",
    )
    assert v.promote and v.min_improvement_pct == -5.0
    slower = abba([{"w": 100.0}] * 2, [{"w": 106.0}, {"w": 106.1}])
    assert not verdict(slower, mode="parity").promote


def test_equal_regressions_report_the_first_shape_in_name_order() -> None:
    inc = [{"b": 8.0, "a": 8.0, "c": 100.0}] * 2
    cand = [{"b": 8.0 * 1.03125, "a": 8.0 * 1.03125, "c": 50.0}] * 2
    v = verdict(abba(inc, cand))
    assert v.worst_shape == "a" and v.worst_shape_regression_pct == pytest.approx(3.125)


def test_ratios_come_out_in_repeat_order_whatever_the_order_of_the_rounds() -> None:
    rounds = abba([{"w": 100.0}] * 3, [{"w": 90.0}, {"w": 80.0}, {"w": 70.0}])
    geo, _ = per_repeat_ratios(list(reversed(rounds)), "A", "B")
    assert geo == pytest.approx([0.9, 0.8, 0.7])


def _binomial_tail(a: int, b: int, x: float) -> float:
    """I_x(a, b) for integer a, b: P(Binomial(a + b - 1, x) >= a), summed exactly term by term."""
    n = a + b - 1
    return math.fsum(math.comb(n, j) * x**j * (1 - x) ** (n - j) for j in range(a, n + 1))


@pytest.mark.parametrize(
    ("a", "b", "x"), [(50, 50, 0.2), (50, 50, 0.8), (200, 5, 0.9), (5, 200, 0.01), (30, 70, 0.6), (2, 3, 0.5)]
)
def test_incomplete_beta_keeps_relative_accuracy_in_both_tails(a: int, b: int, x: float) -> None:
    """Each side of the mean uses its own continued fraction (the other converges slowly and loses a tiny
    tail to cancellation): kills a swapped or removed branch choice."""
    assert _reg_inc_beta(a, b, x) == pytest.approx(_binomial_tail(a, b, x), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize(
    ("small", "median"),
    [
        ([1.2, 1.0, 1.04, 1.1, 0.9], 1.04),  # five repeats: the third smallest
        ([1.2, 1.0, 1.02, 1.04], 1.03),  # four repeats: mean of the two middle ones
    ],
)
def test_guard_median_over_more_repeats(small: list[float], median: float) -> None:
    v = verdict(_two_shapes(small), regression_guard_pct=50.0)
    assert v.worst_shape == "small"
    assert v.worst_shape_regression_pct == pytest.approx((median - 1.0) * 100, abs=1e-9)


def test_each_repeat_pairs_only_the_workloads_measured_in_it() -> None:
    """Repeat 1 lacks workload `b`: its ratio is `a`'s alone (kills pairing across repeats)."""
    rounds = abba([{"a": 100.0, "b": 10.0}, {"a": 100.0}], [{"a": 50.0, "b": 10.0}, {"a": 80.0}])
    geo, per_shape = per_repeat_ratios(rounds, "A", "B")
    assert geo == pytest.approx([math.sqrt(0.5), 0.8])
    assert per_shape == {"a": pytest.approx([0.5, 0.8]), "b": pytest.approx([1.0])}
