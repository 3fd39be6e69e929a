"""Whether a default CPU evaluation can finish in a stated time, judged from the reference's first calls.

Why: the default CPU subset (subset.py) runs the smallest workload when none is within the interpreter's
work cap, and some real problems' smallest workload is still enormous.
`026_video_patch_embedding_projection` of the public benchmark (81 frames, hidden 5120, float16) takes
58 s a reference call on a 2-core host (torch's float16 conv3d on a CPU), and an evaluation makes some
thirty calls of that size (the contract probe, each seed's reference and candidate calls, timing, the
spot-checks): half an hour of grinding that ended, in the corpus run, with no result at all. Element
counts cannot tell this in advance (the same workload in bfloat16 takes 5 s a call), so the first two
reference calls, which the contract probe makes anyway, are timed, and the evaluation stops there when
the faster one projects past the budget (the slower may be one-time set-up; where the operator's own
generator may shape the work by the seed, only once a call on another seed's set is slow too: the
probe's set may be a rare long one), saying what it measured and how to go on: a GPU, or the workload
named explicitly, which is the user's word that the time is wanted (as `--all-workloads` is).

Only the default selection is budgeted: an explicit `--shape-id` or `--all-workloads` runs whatever it
costs. Standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

CPU_BUDGET_S = 600.0  # the longest a default CPU evaluation is projected to take before it is refused
# calls' worth of time an evaluation takes, counted low on purpose (a projection that refuses only the
# clearly hopeless). Measured on this 2-core host (round 29): the contract probe makes 3 reference
# calls; then a compute-bound 1 s call with small outputs took 24 calls' time a workload, and 026 in
# bfloat16 (1.7 GB of outputs to compare) 32 of its 8.7 s first call.
CONTRACT_CALLS = 3
CALLS_PER_WORKLOAD = 20
MIN_CALL_S = 1.0  # below this a call is mostly fixed costs: never extrapolated
JUDGED_CALLS = 2  # the probe's calls judged, on the faster: a first call's one-time set-up is not the rule


class HostTooSlow(RuntimeError):
    """A default CPU evaluation projected far past the budget: the environment's limit (like
    memory.HostTooSmall), never the candidate's."""


@dataclass(frozen=True)
class CpuWorkload:
    id: str
    elements: int  # input + output elements (subset.workload_elements)


def projected_s(call_s: float, chosen: Sequence[CpuWorkload]) -> float:
    """A lower bound of the evaluation's seconds: each chosen workload's calls cost at least the probe's
    (the smallest workload's). Never scaled up by elements: a call of fixed costs (a Python loop, a
    sleep) on a tiny probe would then be extrapolated to hours, refusing an evaluation that fits."""
    return call_s * (CONTRACT_CALLS + CALLS_PER_WORKLOAD * max(1, len(chosen)))


def refusal(
    call_s: float,
    probe: CpuWorkload,
    chosen: Sequence[CpuWorkload],
    budget_s: float = CPU_BUDGET_S,
    calls: int = JUDGED_CALLS,
) -> str | None:
    """Why the default CPU evaluation stops after the probe's reference calls, or None (also for a
    budget of 0 or less: no limit). `call_s`: the fastest of the `calls` judged. Pure."""
    if call_s < MIN_CALL_S or budget_s <= 0:
        return None
    total = projected_s(call_s, chosen)
    if total <= budget_s:
        return None
    ids = " ".join(f"--shape-id {w.id}" for w in chosen)
    if [w.id for w in chosen] == [probe.id]:
        which, call = f"workload {probe.id}", f"the fastest of {calls} reference calls"
    else:
        which, call = (
            f"{len(chosen)} workloads",
            f"the fastest of {calls} reference calls of the smallest, {probe.id},",
        )
    return (
        f"a CPU evaluation of {which} would take at least {_minutes(total)} on this host: {call} "
        f"({probe.elements:,} input+output elements) took {call_s:.1f} s, and an evaluation takes "
        f"at least {CALLS_PER_WORKLOAD} such calls' time a workload, {CONTRACT_CALLS} more in all; a default "
        f"CPU evaluation stops past {_minutes(budget_s)}. Evaluate it on a GPU (--device cuda), or name "
        f"the workload{'s' if len(chosen) > 1 else ''} to run here anyway ({ids})"
    )


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"
