"""The one internal operator model both formats load into (SOL-ExecBench and native Atrex-Bench)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

HIDDEN_FILES = ("metadata.json", "roofline.json")
# Every dtype name an operator may use (SOL's list plus common aliases); torch-free so the coordinator can
# validate an operator without importing torch. `inputs.DTYPES` maps them to torch dtypes.
DTYPE_NAMES = (
    "float64", "fp64", "float32", "float", "fp32", "float16", "half", "fp16", "bfloat16", "bf16",
    "float8_e4m3fn", "float8_e5m2", "fp8_e4m3", "fp8_e5m2", "float4_e2m1fn_x2", "float4_e2m1",
    "bool", "int8", "uint8", "int16", "int32", "int64",
)  # fmt: skip


class OperatorError(ValueError):
    """A bad operator or kernel file: the message names the file, the problem and the fix."""


@dataclass(frozen=True)
class TensorSpec:
    """One input or output: `shape` is axis names/ints, `[]` a 0-d tensor, None a Python scalar."""

    name: str
    shape: tuple[str | int, ...] | None
    dtype: str
    description: str = ""  # SOL's generator reads it too (a "causal attention mask", "binary" values)


@dataclass(frozen=True)
class Tolerance:
    atol: float = 1e-2
    rtol: float = 1e-2
    matched_ratio: float = 0.99
    error_cap: float | None = None
    allow_negative_inf: bool = False


@dataclass
class Workload:
    """One timed case: SOL axes + input descriptors, or native init/input kwargs."""

    id: str
    axes: dict[str, int] = field(default_factory=dict)
    descriptors: dict[str, dict[str, Any]] = field(default_factory=dict)
    tolerance: Tolerance = field(default_factory=Tolerance)
    init_kwargs: dict[str, Any] = field(default_factory=dict)
    input_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Operator:
    kind: Literal["sol", "native"]
    name: str
    directory: Path
    workloads: list[Workload]
    op_type: str = ""
    description: str = ""
    inputs: list[TensorSpec] = field(default_factory=list)
    outputs: list[TensorSpec] = field(default_factory=list)
    reference_source: str = ""
    custom_inputs_entrypoint: str | None = None
    blob_root: Path | None = None  # where relative safetensors paths resolve (FlashInfer-Bench blobs)

    def select(self, shape_ids: list[str] | None) -> list[Workload]:
        if not shape_ids:
            return list(self.workloads)
        known = {w.id: w for w in self.workloads}
        missing = [s for s in shape_ids if s not in known]
        if missing:
            sample = ", ".join(list(known)[:5])
            raise OperatorError(
                f"{self.directory}: unknown --shape-id {missing}; known ids include {sample} "
                f"({len(known)} in all)"
            )
        return [known[s] for s in shape_ids]
