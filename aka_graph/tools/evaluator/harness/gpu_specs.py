"""Per-GPU peak table: the single source for speed-of-light bounds and for `aka_graph.tools.evaluator.arch`.

Two sets of numbers per GPU:
- `datasheet_*`: vendor peaks (dense, no sparsity). They give the *hard* bound: a measured time below
  bytes/datasheet_bw or flops/max datasheet peak is physically impossible -> REWARD_HACK (or a bug).
- `measured_*`: ceilings measured on the real part (H200: 4.3 TB/s device copy, ~790 TFLOP/s bf16 matmul
  on random data, 2026-11-29). Utilization % and the reported `sol_bound_us` use these when known
  (so a Triton RMSNorm at 3.93 TB/s reports 91 %), else the datasheet numbers.
An unknown GPU is an explicit error (UnknownGpuError), never a silent guess; the CPU has no SOL.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

TB = 1e12


@dataclass(frozen=True)
class GpuSpec:
    name: str
    arch: str
    vendor: str
    aliases: tuple[str, ...]
    datasheet_bw: float  # bytes/s
    datasheet_tflops: dict[str, float]  # dtype class -> TFLOP/s (dense)
    l2_bytes: int
    measured_bw: float | None = None
    measured_tflops: dict[str, float] = field(default_factory=dict)
    frameworks: tuple[str, ...] = ("triton", "cuda")

    def tflops(self, dtype_class: str, measured: bool) -> float:
        table = (
            self.measured_tflops
            if measured and dtype_class in self.measured_tflops
            else self.datasheet_tflops
        )
        return table.get(dtype_class) or self.datasheet_tflops.get("fp32", 1.0)

    def bandwidth(self, measured: bool) -> float:
        return self.measured_bw if measured and self.measured_bw else self.datasheet_bw


_NV_HOPPER = ("triton", "gluon", "cute_dsl", "cuda")
_NV_BLACKWELL = ("triton", "gluon", "cute_dsl", "cuda")
_MB = 1 << 20

GPU_SPECS: dict[str, GpuSpec] = {
    s.name: s
    for s in (
        GpuSpec(
            "H200",
            "sm_90",
            "nvidia",
            ("h200",),
            4.8 * TB,
            {"bf16": 989, "fp16": 989, "fp8": 1979, "tf32": 494, "fp32": 67, "int8": 1979},
            60 * _MB,
            measured_bw=4.3 * TB,
            measured_tflops={"bf16": 790, "fp16": 790},
            frameworks=_NV_HOPPER,
        ),
        GpuSpec(
            "H100-PCIe",
            "sm_90",
            "nvidia",
            ("h100 pcie", "h100-pcie"),
            2.0 * TB,
            {"bf16": 756, "fp16": 756, "fp8": 1513, "tf32": 378, "fp32": 51, "int8": 1513},
            50 * _MB,
            frameworks=_NV_HOPPER,
        ),
        GpuSpec(
            "H100-SXM",
            "sm_90",
            "nvidia",
            ("h100",),
            3.35 * TB,
            {"bf16": 989, "fp16": 989, "fp8": 1979, "tf32": 494, "fp32": 67, "int8": 1979},
            50 * _MB,
            frameworks=_NV_HOPPER,
        ),
        GpuSpec(
            "A100",
            "sm_80",
            "nvidia",
            ("a100",),
            2.039 * TB,
            {"bf16": 312, "fp16": 312, "tf32": 156, "fp32": 19.5, "int8": 624},
            40 * _MB,
            frameworks=("triton", "cute_dsl", "cuda"),
        ),
        GpuSpec(
            "L40S",
            "sm_89",
            "nvidia",
            ("l40s",),
            0.864 * TB,
            {"bf16": 362, "fp16": 362, "fp8": 733, "tf32": 183, "fp32": 91.6, "int8": 733},
            96 * _MB,
            frameworks=("triton", "cuda"),
        ),
        GpuSpec(
            "B200",
            "sm_100",
            "nvidia",
            ("b200",),
            8.0 * TB,
            {"bf16": 2250, "fp16": 2250, "fp8": 4500, "tf32": 1100, "fp32": 75, "int8": 4500},
            126 * _MB,
            frameworks=_NV_BLACKWELL,
        ),
        GpuSpec(
            "MI300X",
            "gfx942",
            "amd",
            ("mi300x",),
            5.3 * TB,
            {"bf16": 1307, "fp16": 1307, "fp8": 2615, "tf32": 654, "fp32": 163.4, "int8": 2615},
            256 * _MB,
            frameworks=("triton",),
        ),
    )
}


class UnknownGpuError(LookupError):
    """A GPU the table does not know: the speed-of-light bound would be a guess."""


def known_names() -> list[str]:
    return sorted(GPU_SPECS)


def lookup(name: str, table: dict[str, GpuSpec] | None = None) -> GpuSpec:
    """By table name (case-insensitive) or by a detected device name such as 'NVIDIA H200'."""
    table = table or GPU_SPECS
    low = name.strip().lower()
    for spec in table.values():
        if spec.name.lower() == low:
            return spec
    for spec in table.values():  # table order puts specific aliases (H100 PCIe) before general ones
        if any(alias in low for alias in spec.aliases):
            return spec
    raise UnknownGpuError(
        f"GPU {name!r} is not in the peak table ({', '.join(sorted(table))}); pass --gpu-spec NAME to "
        "use a known entry, or --peak-table FILE with measured ceilings, or add it to harness/gpu_specs.py"
    )


def load_table(path: Path) -> dict[str, GpuSpec]:
    """A JSON peak table (list of GpuSpec fields) for other parts or tests."""
    rows = json.loads(Path(path).read_text())
    specs = {}
    for row in rows:
        row = dict(row)
        row["aliases"] = tuple(row.get("aliases") or (row["name"].lower(),))
        row["frameworks"] = tuple(row.get("frameworks") or ("triton",))
        row["datasheet_bw"] = float(row["datasheet_bw"])
        specs[row["name"]] = GpuSpec(**row)
    return specs
