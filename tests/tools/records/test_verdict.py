"""The promotion verdict: a strict, statistically supported improvement, no shape beyond the guard, and
never across timing methods."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest

from aka_graph.tools.records.verdict import decide, per_repeat_ratios, student_t_sf


@dataclass
class Round:
    label: str
    repeat: int
    position: int
    latency_us: dict[str, float] = field(default_factory=dict)


def abba(inc: list[dict[str, float]], cand: list[dict[str, float]]) -> list[Round]:
    """ABBA rounds: per repeat r, A uses inc[r], B uses cand[r] (both measured twice)."""
    rounds = []
    for r, (a, b) in enumerate(zip(inc, cand, strict=True)):
        for pos, (label, lat) in enumerate((("A", a), ("B", b), ("B", b), ("A", a))):
            rounds.append(Round(label, r, pos, dict(lat)))
    return rounds


SAME = {"A": "cuda_graph", "B": "cuda_graph"}


def run(rounds: list[Round], **kw: float) -> object:
    args = dict(min_improvement_pct=1.0, regression_guard_pct=5.0)
    args.update(kw)
    return decide(rounds, incumbent="A", candidate="B", timing_methods=SAME, **args)


@pytest.mark.parametrize(
    ("t", "df", "expected"),
    [
        (0.0, 1, 0.5),
        (1.0, 1, 0.25),
        (6.313751514675, 1, 0.05),
        (2.353363434801, 3, 0.05),
        (-1.0, 1, 0.75),
        (1.812461122811, 10, 0.05),
    ],
)
def test_student_t_tail_matches_tables(t: float, df: int, expected: float) -> None:
    assert student_t_sf(t, df) == pytest.approx(expected, abs=1e-6)


def test_consistent_ten_percent_win_is_promoted() -> None:
    v = run(
        abba(
            [{"w1": 100, "w2": 50}, {"w1": 101, "w2": 50.5}], [{"w1": 90, "w2": 45}, {"w1": 90.5, "w2": 45.2}]
        )
    )
    assert v.promote, v.reason
    assert v.improvement_pct == pytest.approx(10.2, abs=0.3)
    assert v.p_value < 0.05 and v.repeats == 2


def test_win_below_min_improvement_is_rejected() -> None:
    v = run(abba([{"w": 100}, {"w": 100}], [{"w": 99.5}, {"w": 99.4}]), min_improvement_pct=1.0)
    assert not v.promote and "not > 1.00%" in v.reason


def test_noisy_repeats_that_disagree_are_not_significant() -> None:
    v = run(abba([{"w": 100}, {"w": 100}], [{"w": 80}, {"w": 97}]))
    assert not v.promote and "not significant" in v.reason
    assert 0.05 < v.p_value < 1


def test_one_repeat_never_promotes() -> None:
    v = run(abba([{"w": 100}], [{"w": 50}]))
    assert not v.promote and "cannot support" in v.reason


def test_a_repeat_that_misses_the_threshold_blocks_promotion() -> None:
    v = run(abba([{"w": 100}] * 3, [{"w": 80}, {"w": 81}, {"w": 99.5}]))
    assert not v.promote and "not every repeat" in v.reason


def test_shape_regressing_beyond_the_guard_blocks_promotion() -> None:
    inc = [{"big": 100.0, "small": 10.0}] * 2
    cand = [{"big": 60.0, "small": 10.6}, {"big": 60.5, "small": 10.61}]
    v = run(abba(inc, cand), regression_guard_pct=5.0)
    assert not v.promote and v.worst_shape == "small" and "guard" in v.reason
    assert v.worst_shape_regression_pct == pytest.approx(6.05, abs=0.1)


def test_shape_regressing_within_the_guard_is_allowed() -> None:
    inc = [{"big": 100.0, "small": 10.0}] * 2
    cand = [{"big": 60.0, "small": 10.4}, {"big": 60.5, "small": 10.41}]
    assert run(abba(inc, cand)).promote


def test_different_timing_methods_are_refused() -> None:
    rounds = abba([{"w": 100}] * 2, [{"w": 50}] * 2)
    v = decide(
        rounds,
        incumbent="A",
        candidate="B",
        timing_methods={"A": "cuda_graph", "B": "cuda_event"},
        min_improvement_pct=1.0,
        regression_guard_pct=5.0,
    )
    assert not v.promote and v.reason.startswith("refused: different timing methods")


def test_slower_candidate_is_rejected() -> None:
    v = run(abba([{"w": 100}] * 2, [{"w": 110}, {"w": 111}]))
    assert not v.promote and v.improvement_pct < 0


def test_identical_repeats_with_a_clear_win_are_promoted() -> None:
    v = run(abba([{"w": 100}] * 2, [{"w": 80}] * 2))
    assert v.promote and v.p_value == 0.0


def test_conversion_passes_at_parity_within_five_percent() -> None:
    rounds = abba([{"w": 100}] * 2, [{"w": 103}, {"w": 103.2}])
    assert decide(
        rounds,
        incumbent="A",
        candidate="B",
        timing_methods=SAME,
        min_improvement_pct=1.0,
        regression_guard_pct=5.0,
        mode="parity",
        parity_pct=5.0,
    ).promote
    slow = abba([{"w": 100}] * 2, [{"w": 108}, {"w": 108.5}])
    assert not decide(
        slow,
        incumbent="A",
        candidate="B",
        timing_methods=SAME,
        min_improvement_pct=1.0,
        regression_guard_pct=5.0,
        mode="parity",
        parity_pct=5.0,
    ).promote


def test_ratios_average_both_blocks_of_a_label_within_a_repeat() -> None:
    rounds = [
        Round("A", 0, 0, {"w": 100}),
        Round("B", 0, 1, {"w": 80}),
        Round("B", 0, 2, {"w": 100}),
        Round("A", 0, 3, {"w": 100}),
    ]
    geo, per_shape = per_repeat_ratios(rounds, "A", "B")
    assert geo == [pytest.approx(0.9)] and per_shape == {"w": [pytest.approx(0.9)]}
    assert math.isclose(geo[0], 0.9)
