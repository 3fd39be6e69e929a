"""Promote-or-not, as pure statistics over one interleaved comparison (design §1.5, §5).

The observation is one number per repeat: the geometric mean over workloads of candidate/incumbent
latency, both measured in that repeat (ABBA: the two A blocks and the two B blocks averaged). Repeats are
the independent units — workloads within a repeat share the machine's state, so treating shapes as
samples would overstate the evidence.

The one-sided test is Student's t on the log ratios against the required minimum improvement:
H0: mean log ratio >= log(1 - min_improvement). With n repeats it has n-1 degrees of freedom; with the
default 2 repeats (df = 1) it is valid under normal log-ratio noise but deliberately strict (critical
t = 6.31 at alpha 0.05), so it only passes when both repeats agree closely — which is what we want from
two numbers. A sign test cannot be used at n = 2 (its smallest one-sided p is 0.25). We also require every
single repeat to clear the threshold, and no workload's ratio (median over repeats) to regress by more
than the guard. One repeat cannot estimate noise at all, so it never promotes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, Protocol

from pydantic import BaseModel

ALPHA = 0.05
VerdictMode = Literal["improve", "parity"]


class RoundLike(Protocol):
    label: str
    repeat: int
    position: int
    latency_us: Mapping[str, float]


class Verdict(BaseModel):
    promote: bool
    reason: str
    mode: VerdictMode
    repeats: int
    per_repeat_ratio: list[float]
    improvement_pct: float | None
    t_stat: float | None
    p_value: float | None
    worst_shape: str | None
    worst_shape_regression_pct: float | None
    min_improvement_pct: float
    regression_guard_pct: float
    timing_method: str


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-14:
            break
    return h


def _reg_inc_beta(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def student_t_sf(t: float, df: int) -> float:
    """P(T >= t) for Student's t with `df` degrees of freedom."""
    tail = 0.5 * _reg_inc_beta(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def per_repeat_ratios(
    rounds: Iterable[RoundLike], incumbent: str, candidate: str
) -> tuple[list[float], dict[str, list[float]]]:
    """Geomean candidate/incumbent ratio per repeat, and each workload's ratio per repeat."""
    sums: dict[tuple[int, str, str], list[float]] = {}
    for rnd in rounds:
        for workload, latency in rnd.latency_us.items():
            sums.setdefault((rnd.repeat, rnd.label, workload), []).append(latency)
    repeats = sorted({key[0] for key in sums})
    geo: list[float] = []
    per_shape: dict[str, list[float]] = {}
    for rep in repeats:
        logs: list[float] = []
        workloads = sorted({w for (r, label, w) in sums if r == rep and label == incumbent})
        for workload in workloads:
            inc = sums.get((rep, incumbent, workload))
            cand = sums.get((rep, candidate, workload))
            if not inc or not cand:
                continue
            ratio = (sum(cand) / len(cand)) / (sum(inc) / len(inc))
            per_shape.setdefault(workload, []).append(ratio)
            logs.append(math.log(ratio))
        if logs:
            geo.append(math.exp(sum(logs) / len(logs)))
    return geo, per_shape


def decide(
    rounds: Sequence[RoundLike],
    *,
    incumbent: str,
    candidate: str,
    timing_methods: Mapping[str, str],
    min_improvement_pct: float,
    regression_guard_pct: float,
    mode: VerdictMode = "improve",
    parity_pct: float = 5.0,
) -> Verdict:
    """Promote `candidate` over `incumbent`? `mode="parity"` (a framework conversion) asks only that the
    candidate is not slower than `parity_pct`, with the same test and guard."""
    methods = set(timing_methods.values())
    ratios, per_shape = per_repeat_ratios(rounds, incumbent, candidate)
    threshold_pct = min_improvement_pct if mode == "improve" else -parity_pct
    base = dict(
        mode=mode,
        repeats=len(ratios),
        per_repeat_ratio=ratios,
        min_improvement_pct=threshold_pct,
        regression_guard_pct=regression_guard_pct,
        timing_method=",".join(sorted(methods)),
    )
    none = dict(
        improvement_pct=None, t_stat=None, p_value=None, worst_shape=None, worst_shape_regression_pct=None
    )
    if len(methods) != 1:
        return Verdict(
            promote=False, reason=f"refused: different timing methods {sorted(methods)}", **base, **none
        )
    if not ratios:
        return Verdict(promote=False, reason="refused: no paired measurements", **base, **none)
    logs = [math.log(r) for r in ratios]
    mean = sum(logs) / len(logs)
    improvement = (1.0 - math.exp(mean)) * 100.0
    worst_shape, worst = None, -math.inf
    for workload, values in per_shape.items():
        median = (
            sorted(values)[len(values) // 2]
            if len(values) % 2
            else (sum(sorted(values)[len(values) // 2 - 1 : len(values) // 2 + 1]) / 2)
        )
        regression = (median - 1.0) * 100.0
        if regression > worst:
            worst_shape, worst = workload, regression
    limit = math.log(1.0 - threshold_pct / 100.0)
    t_stat, p_value = None, None
    if len(logs) >= 2:
        sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
        if sd == 0.0:
            t_stat = -math.inf if mean < limit else math.inf
            p_value = 0.0 if mean < limit else 1.0
        else:
            t_stat = (mean - limit) / (sd / math.sqrt(len(logs)))
            p_value = 1.0 - student_t_sf(t_stat, len(logs) - 1)  # P(T <= t): small when mean << limit
    numbers = dict(
        improvement_pct=improvement,
        t_stat=t_stat,
        p_value=p_value,
        worst_shape=worst_shape,
        worst_shape_regression_pct=worst,
    )
    goal = f"> {threshold_pct:.2f}%" if mode == "improve" else f"within {parity_pct:.2f}% (parity)"
    if improvement <= threshold_pct:
        reason = f"improvement {improvement:.2f}% not {goal}"
    elif any(math.log(r) >= limit for r in ratios):
        reason = f"not every repeat clears {goal}: ratios {[round(r, 4) for r in ratios]}"
    elif p_value is None:
        reason = f"{len(ratios)} repeat cannot support a one-sided test (need >= 2)"
    elif p_value >= ALPHA:
        reason = f"improvement {improvement:.2f}% not significant (one-sided t, p={p_value:.3f} >= {ALPHA})"
    elif worst > regression_guard_pct:
        reason = f"shape {worst_shape} regresses {worst:.2f}% > guard {regression_guard_pct:.2f}%"
    else:
        return Verdict(
            promote=True, reason=f"improvement {improvement:.2f}% {goal}, p={p_value:.4f}", **base, **numbers
        )
    return Verdict(promote=False, reason=reason, **base, **numbers)
