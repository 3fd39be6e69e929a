"""Loader for SOL-ExecBench operators: `definition.json` + `workload.jsonl` (design §4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .axes import AxisError, resolve_axes
from .opmodel import Operator, OperatorError, TensorSpec, Tolerance, Workload

_DESCRIPTOR_TYPES = ("random", "scalar", "custom", "safetensors")


def _tensor_specs(raw: Any, what: str, path: Path) -> list[TensorSpec]:
    if not isinstance(raw, dict) or not raw:
        raise OperatorError(f"{path}: '{what}' must be a non-empty object of name -> {{shape, dtype}}")
    specs = []
    for name, spec in raw.items():
        if not isinstance(spec, dict) or "dtype" not in spec or "shape" not in spec:
            raise OperatorError(f"{path}: {what}.{name} needs 'shape' (list, [] or null) and 'dtype'")
        shape = spec["shape"]
        if shape is not None and not isinstance(shape, list):
            raise OperatorError(f"{path}: {what}.{name}.shape must be a list of axis names, [] or null")
        specs.append(TensorSpec(name, None if shape is None else tuple(shape), str(spec["dtype"])))
    return specs


def _tolerance(raw: dict[str, Any] | None) -> Tolerance:
    raw = raw or {}
    cap = raw.get("max_error_cap")
    return Tolerance(
        atol=float(raw.get("max_atol", 1e-2)),
        rtol=float(raw.get("max_rtol", 1e-2)),
        matched_ratio=float(raw.get("required_matched_ratio", 0.99)),
        error_cap=None if cap is None else float(cap),
        allow_negative_inf=bool(raw.get("allow_negative_inf", False)),
    )


def load_sol(op_dir: Path) -> Operator:
    def_path = op_dir / "definition.json"
    wl_path = op_dir / "workload.jsonl"
    try:
        definition = json.loads(def_path.read_text())
    except json.JSONDecodeError as exc:
        raise OperatorError(f"{def_path}: not valid JSON ({exc}); fix the file") from None
    for key in ("name", "axes", "inputs", "outputs", "reference"):
        if key not in definition:
            raise OperatorError(f"{def_path}: missing required field {key!r}")
    if not wl_path.is_file():
        raise OperatorError(f"{wl_path}: missing; a SOL operator needs one workload per line")
    inputs = _tensor_specs(definition["inputs"], "inputs", def_path)
    outputs = _tensor_specs(definition["outputs"], "outputs", def_path)
    axes_defs = definition["axes"]
    entry = definition.get("custom_inputs_entrypoint") or None
    op = Operator(
        kind="sol",
        name=str(definition["name"]),
        directory=op_dir,
        workloads=[],
        op_type=str(definition.get("op_type") or ""),
        description=str(definition.get("description") or ""),
        inputs=inputs,
        outputs=outputs,
        reference_source=str(definition["reference"]),
        custom_inputs_entrypoint=entry,
    )
    names = {s.name for s in inputs}
    for lineno, line in enumerate(wl_path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        where = f"{wl_path}:{lineno}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise OperatorError(f"{where}: not valid JSON ({exc})") from None
        row = row.get("workload", row)  # some dumps nest the workload under 'workload'
        if "uuid" not in row:
            raise OperatorError(f"{where}: workload has no 'uuid'")
        try:
            axes = resolve_axes(axes_defs, row.get("axes") or {}, where)
        except AxisError as exc:
            raise OperatorError(str(exc)) from None
        descriptors = row.get("inputs") or {}
        for name in names:
            desc = descriptors.setdefault(name, {"type": "random"})
            if desc.get("type") not in _DESCRIPTOR_TYPES:
                raise OperatorError(
                    f"{where}: input {name!r} has descriptor type {desc.get('type')!r}; "
                    f"use one of {_DESCRIPTOR_TYPES}"
                )
            if desc["type"] == "custom" and not entry:
                raise OperatorError(
                    f"{where}: input {name!r} is 'custom' but {def_path} sets no custom_inputs_entrypoint"
                )
        extra = set(descriptors) - names
        if extra:
            raise OperatorError(f"{where}: descriptors for unknown inputs {sorted(extra)}")
        op.workloads.append(
            Workload(
                id=str(row["uuid"]),
                axes=axes,
                descriptors=descriptors,
                tolerance=_tolerance(row.get("tolerance")),
            )
        )
    if not op.workloads:
        raise OperatorError(f"{wl_path}: no workloads")
    return op
