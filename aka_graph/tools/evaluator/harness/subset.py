"""Which workloads a CPU evaluation runs by default: a representative subset within a stated work cap.

Under the Triton interpreter a kernel costs roughly its element count in Python-level work: the full
`rmsnorm` fixture (rows up to 14 509 x 4096) took over five minutes. So by default a CPU evaluation runs
the smallest, the median and the largest workload among those within the cap (the smallest workload when
none is), chosen from the operator's files alone: the same operator always gets the same subset, so a
campaign's objective stays comparable between evaluations. `--all-workloads` runs every one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .opmodel import Operator, Workload

CPU_WORK_CAP_ELEMENTS = 1 << 21  # input + output elements of one workload (~2 M)
CPU_MAX_WORKLOADS = 3


def _tensor_sizes(op: Operator, wl: Workload) -> list[int]:
    """Elements of each tensor of a workload (SOL: each input and output from its axes; native: one
    figure, the product of the integer input kwargs, a proxy of the same order)."""
    if op.kind != "sol":
        ints = [v for v in wl.input_kwargs.values() if isinstance(v, int) and not isinstance(v, bool)]
        return [math.prod(ints)] if ints else []
    sizes = []
    for spec in [*op.inputs, *op.outputs]:
        if spec.shape is None:
            continue
        dims = [
            d if isinstance(d, int) else wl.axes.get(str(d), int(d) if str(d).isdigit() else 0)
            for d in spec.shape
        ]
        sizes.append(math.prod(dims))
    return sizes


def workload_elements(op: Operator, wl: Workload) -> int:
    """Input + output elements of a workload."""
    return sum(_tensor_sizes(op, wl))


def has_empty_tensor(op: Operator, wl: Workload) -> bool:
    """Whether some input or output of the workload has no elements (a serving step with no new tokens):
    a call there shows nothing of what the operator does to its tensors."""
    return any(size == 0 for size in _tensor_sizes(op, wl))


@dataclass(frozen=True)
class Selection:
    indices: list[int]
    note: str  # empty when every requested workload runs


def representative(
    op: Operator, indices: list[int], cap: int = CPU_WORK_CAP_ELEMENTS, most: int = CPU_MAX_WORKLOADS
) -> Selection:
    if len(indices) <= 1:
        return Selection(list(indices), "")
    size = {i: workload_elements(op, op.workloads[i]) for i in indices}
    ordered = sorted(indices, key=lambda i: (size[i], i))
    eligible = [i for i in ordered if size[i] <= cap]
    picks = [eligible[0], eligible[len(eligible) // 2], eligible[-1]] if eligible else ordered[:1]
    chosen = sorted(dict.fromkeys(picks[:most]), key=indices.index)
    if len(chosen) == len(indices):
        return Selection(chosen, "")
    ids = ", ".join(op.workloads[i].id for i in chosen)
    which = (
        f"the smallest, median and largest of the {len(eligible)} within the interpreter's work cap of "
        f"{cap:,} input+output elements per workload"
        if eligible
        else f"none is within the interpreter's work cap of {cap:,} input+output elements per workload, "
        f"so only the smallest runs ({size[chosen[0]]:,} elements: it may take long)"
    )
    note = (
        f"CPU evaluation: {len(chosen)} of {len(indices)} workloads ({ids}): {which}; the same subset "
        "every time for this operator. Pass --all-workloads to evaluate every workload"
    )
    return Selection(chosen, note)
