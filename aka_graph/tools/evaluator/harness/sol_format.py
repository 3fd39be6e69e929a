"""Loader for SOL-ExecBench operators: `definition.json` + `workload.jsonl` (design §4).

Everything about the files is checked here, at load time, so a malformed operator is a user error with
the file, the problem and the fix (exit 2), never an INFRA_ERROR halfway through an evaluation. The format
follows SOL-ExecBench's public definition/workload docs: a shape entry is an axis name or an integer
(also written as a string of digits), `[]` is a 0-d tensor and `null` a Python scalar; unknown fields
(`hf_id` set to "", `tags`, `constraints`, descriptions) are ignored.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from .axes import AxisError, resolve_axes
from .opmodel import DTYPE_NAMES, Operator, OperatorError, TensorSpec, Tolerance, Workload

_DESCRIPTOR_TYPES = ("random", "scalar", "custom", "safetensors")
_AXIS_TYPES = ("const", "var", "expr")


def shape_entry(dim: Any, axes: dict[str, Any], where: str) -> str | int:
    """One shape entry: an int (or digit string) literal, or the name of a declared axis."""
    if isinstance(dim, bool):
        raise OperatorError(f"{where}: shape entry {dim!r} is a boolean; use an axis name or an integer")
    if isinstance(dim, int):
        if dim < 0:
            raise OperatorError(f"{where}: shape entry {dim} is negative; use a size >= 0")
        return dim
    if isinstance(dim, str) and dim.strip().isdigit():
        return int(dim.strip())
    if isinstance(dim, str) and dim in axes:
        return dim
    raise OperatorError(
        f"{where}: shape uses axis {dim!r} that 'axes' does not declare; declare it in 'axes' "
        "(type const, var or expr) or write an integer size"
    )


def _tensor_specs(raw: Any, what: str, path: Path, axes: dict[str, Any]) -> list[TensorSpec]:
    if not isinstance(raw, dict) or (not raw and what == "outputs"):
        raise OperatorError(f"{path}: '{what}' must be a non-empty object of name -> {{shape, dtype}}")
    specs = []
    for name, spec in raw.items():
        where = f"{path}: {what}.{name}"
        if not isinstance(spec, dict) or "dtype" not in spec or "shape" not in spec:
            raise OperatorError(f"{where} needs 'shape' (a list, [] or null) and 'dtype'")
        shape = spec["shape"]
        if shape is not None and not isinstance(shape, list):
            raise OperatorError(f"{where}.shape must be a list of axis names or integers, [] or null")
        dtype = str(spec["dtype"])
        if dtype not in DTYPE_NAMES:
            raise OperatorError(f"{where}: unknown dtype {dtype!r}; use one of {', '.join(DTYPE_NAMES)}")
        dims = None if shape is None else tuple(shape_entry(d, axes, where) for d in shape)
        specs.append(TensorSpec(name, dims, dtype, str(spec.get("description") or "")))
    return specs


def _tolerance(raw: Any, where: str) -> Tolerance:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise OperatorError(f"{where}: 'tolerance' must be an object (max_atol, max_rtol, ...)")
    cap = raw.get("max_error_cap")
    try:
        return Tolerance(
            atol=float(raw.get("max_atol", 1e-2)),
            rtol=float(raw.get("max_rtol", 1e-2)),
            matched_ratio=float(raw.get("required_matched_ratio", 0.99)),
            error_cap=None if cap is None else float(cap),
            allow_negative_inf=bool(raw.get("allow_negative_inf", False)),
        )
    except (TypeError, ValueError) as exc:
        raise OperatorError(f"{where}: tolerance values must be numbers ({exc})") from None


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise OperatorError(f"{path}: not valid JSON ({exc}); fix the {what}") from None
    except OSError as exc:
        raise OperatorError(f"{path}: cannot be read ({exc.strerror})") from None


def _check_axes(axes: Any, path: Path) -> dict[str, Any]:
    if not isinstance(axes, dict):
        raise OperatorError(f"{path}: 'axes' must be an object of name -> {{type: const|var|expr, ...}}")
    for name, spec in axes.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if kind not in _AXIS_TYPES:
            raise OperatorError(f"{path}: axis {name!r} has type {kind!r}; use const, var or expr")
        if kind == "expr" and not str(spec.get("expression") or "").strip():
            raise OperatorError(f"{path}: expr axis {name!r} has no 'expression'")
    return axes


def _check_reference(source: Any, entry: str | None, path: Path) -> str:
    where = f"{path}: reference"
    if not isinstance(source, str) or not source.strip():
        raise OperatorError(f"{where} must be Python source defining run(...)")
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise OperatorError(
            f"{where} does not compile (line {exc.lineno}: {exc.msg}); fix the source"
        ) from None
    names = module_bindings(tree.body)
    if "run" not in names:
        raise OperatorError(f"{where} defines no top-level run(...); the reference's entry point is run")
    if entry is not None and entry not in names:
        raise OperatorError(
            f"{path}: custom_inputs_entrypoint {entry!r} is not a top-level function of the reference; "
            "define it there or remove the field"
        )
    return source


def module_bindings(body: list[ast.stmt]) -> set[str]:
    """The names a module's top level binds, as SOL's driver finds them (the module's namespace): a def,
    also one inside a top-level `if`/`try`/`with` (an optional fast path and its fallback), an assignment
    (`run = torch.no_grad()(_impl)`, `make_inputs = functools.partial(...)`), an import. Whether the
    name is callable is known only once the module runs (modules.load_reference checks it)."""
    found: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
            for branch in ("body", "orelse", "finalbody"):
                found |= module_bindings(getattr(node, branch, []))
            for handler in getattr(node, "handlers", []):
                found |= module_bindings(handler.body)
    return found


def _descriptors(row: dict[str, Any], inputs: list[TensorSpec], entry: str | None, where: str) -> dict:
    raw = row.get("inputs") or {}
    if not isinstance(raw, dict):
        raise OperatorError(f"{where}: 'inputs' must be an object of input name -> descriptor")
    names = [s.name for s in inputs]
    # descriptors for inputs the definition does not have are ignored, as SOL's generator ignores them
    raw = {k: v for k, v in raw.items() if k in names}
    descriptors: dict[str, dict[str, Any]] = {}
    for spec in inputs:
        # an input without a descriptor is random, as in SOL (the custom generator may still supply it)
        desc = raw.get(spec.name) or {"type": "random"}
        kind = desc.get("type") if isinstance(desc, dict) else None
        if kind not in _DESCRIPTOR_TYPES:
            raise OperatorError(
                f"{where}: input {spec.name!r} has descriptor type {kind!r}; use one of {_DESCRIPTOR_TYPES}"
            )
        if kind == "scalar" and "value" not in desc:
            raise OperatorError(f"{where}: scalar input {spec.name!r} has no 'value'")
        if kind == "safetensors" and not desc.get("path"):
            raise OperatorError(f"{where}: safetensors input {spec.name!r} has no 'path'")
        if kind == "custom" and not entry:
            raise OperatorError(
                f"{where}: input {spec.name!r} is 'custom' but definition.json sets no "
                "custom_inputs_entrypoint; set it or describe the input as random"
            )
        descriptors[spec.name] = dict(desc)
    return descriptors


def load_sol(op_dir: Path) -> Operator:
    def_path = op_dir / "definition.json"
    wl_path = op_dir / "workload.jsonl"
    definition = _read_json(def_path, "definition")
    if not isinstance(definition, dict):
        raise OperatorError(f"{def_path}: must hold one JSON object (name, axes, inputs, outputs, reference)")
    for key in ("name", "axes", "inputs", "outputs", "reference"):
        if key not in definition:
            raise OperatorError(f"{def_path}: missing required field {key!r}; add it")
    if not wl_path.is_file():
        raise OperatorError(
            f"{wl_path}: missing; a SOL operator needs workload.jsonl beside definition.json, "
            "one JSON workload (uuid, axes, inputs) per line"
        )
    axes_defs = _check_axes(definition["axes"], def_path)
    entry = definition.get("custom_inputs_entrypoint") or None
    if entry is not None and (not isinstance(entry, str) or not entry.isidentifier()):
        raise OperatorError(f"{def_path}: custom_inputs_entrypoint {entry!r} must be a function name")
    inputs = _tensor_specs(definition["inputs"], "inputs", def_path, axes_defs)
    outputs = _tensor_specs(definition["outputs"], "outputs", def_path, axes_defs)
    op = Operator(
        kind="sol",
        name=str(definition["name"]),
        directory=op_dir,
        workloads=[],
        op_type=str(definition.get("op_type") or ""),
        description=str(definition.get("description") or ""),
        inputs=inputs,
        outputs=outputs,
        reference_source=_check_reference(definition["reference"], entry, def_path),
        custom_inputs_entrypoint=entry,
    )
    for lineno, line in enumerate(wl_path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        where = f"{wl_path}:{lineno}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise OperatorError(f"{where}: not valid JSON ({exc}); one workload object per line") from None
        if not isinstance(row, dict):
            raise OperatorError(f"{where}: a workload must be a JSON object (uuid, axes, inputs)")
        if isinstance(row.get("workload"), dict):  # FlashInfer trace dumps nest it under 'workload'
            row = row["workload"]
        if "uuid" not in row:
            raise OperatorError(f"{where}: workload has no 'uuid'; give each workload a unique id")
        values = row.get("axes") or {}
        if not isinstance(values, dict):
            raise OperatorError(f"{where}: 'axes' must be an object of var axis -> integer")
        try:
            axes = resolve_axes(axes_defs, values, where)
        except AxisError as exc:
            raise OperatorError(str(exc)) from None
        except (TypeError, ValueError) as exc:
            raise OperatorError(f"{where}: axis values must be integers ({exc})") from None
        op.workloads.append(
            Workload(
                id=str(row["uuid"]),
                axes=axes,
                descriptors=_descriptors(row, inputs, entry, where),
                tolerance=_tolerance(row.get("tolerance"), where),
            )
        )
    if not op.workloads:
        raise OperatorError(f"{wl_path}: no workloads; add one JSON workload per line")
    return op
