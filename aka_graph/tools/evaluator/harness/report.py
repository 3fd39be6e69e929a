"""The result JSON (schema `aka_graph.evaluation.v1`, see `tools/evaluator/evaluation_result.py`) and the
human table printed on stderr."""

from __future__ import annotations

import math
from typing import Any

SCHEMA_ID = "aka_graph.evaluation.v1"
PRECEDENCE = ("INFRA_ERROR", "REWARD_HACK", "COMPILE_ERROR", "TIMEOUT", "RUNTIME_ERROR", "INCORRECT", "PASS")


def worst(statuses: list[str]) -> str:
    if not statuses:
        return "INFRA_ERROR"
    return min(statuses, key=PRECEDENCE.index)


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def summary(workloads: list[dict[str, Any]]) -> dict[str, Any]:
    lat = geomean([w["latency_us"] for w in workloads if w.get("latency_us")])
    util = geomean([w["utilization_pct"] for w in workloads if w.get("utilization_pct")])
    return {"objective": lat, "geomean_latency_us": lat, "geomean_utilization_pct": util}


def result(
    status: str,
    kernel_sha256: str,
    device: dict[str, Any],
    timing_method: str,
    authoritative: bool,
    seeds: list[int],
    workloads: list[dict[str, Any]],
    message: str = "",
    **extra: Any,
) -> dict[str, Any]:
    passed = status == "PASS"
    return {
        "schema": SCHEMA_ID,
        "status": status,
        "kernel_sha256": kernel_sha256,
        "device": device,
        "timing_method": timing_method,
        "authoritative": authoritative and passed,
        "seeds": seeds,
        "workloads": workloads,
        "summary": summary(workloads)
        if passed
        else {"objective": None, "geomean_latency_us": None, "geomean_utilization_pct": None},
        "message": message,
        **extra,
    }


def _fmt(value: Any, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def table(res: dict[str, Any]) -> str:
    head = (
        f"{res['status']}  kernel {res['kernel_sha256'][:12]}  device {res['device'].get('name')}  "
        f"timing {res['timing_method']}{'' if res['authoritative'] else ' (non-authoritative)'}"
    )
    rows = [
        head,
        f"{'workload':<14}{'status':<15}{'max_abs':>10}{'lat_us':>11}{'ref_us':>11}"
        f"{'speedup':>9}{'sol_us':>9}{'util%':>8}{'spread%':>9}",
    ]
    for w in res["workloads"]:
        ref, lat = w.get("reference_latency_us"), w.get("latency_us")
        speed = ref / lat if ref and lat else None
        rows.append(
            f"{w['id'][:13]:<14}{w['status']:<15}{_fmt(w.get('max_abs_error'), '.3g'):>10}"
            f"{_fmt(lat):>11}{_fmt(ref):>11}{_fmt(speed):>9}{_fmt(w.get('sol_bound_us')):>9}"
            f"{_fmt(w.get('utilization_pct'), '.1f'):>8}{_fmt(w.get('spread_pct'), '.1f'):>9}"
        )
        if w.get("message"):
            rows.append(f"    {w['message'].splitlines()[0][:150]}")
    s = res.get("summary") or {}
    rows.append(
        f"geomean latency {_fmt(s.get('geomean_latency_us'))} us, geomean utilization "
        f"{_fmt(s.get('geomean_utilization_pct'), '.1f')} %"
    )
    if res.get("message"):
        rows.append(res["message"][:2000])
    note = res.get("workload_selection")
    if note and note != res.get("message"):  # which workloads a CPU run evaluated, and why
        rows.append(note)
    return "\n".join(rows)
