"""Loader for native Atrex-Bench operators: `reference.py` Model, `input.py`, `shapes.json`.

Hidden files beside them (`metadata.json`, `roofline.json`) are never opened.
"""

from __future__ import annotations

import json
from pathlib import Path

from .opmodel import Operator, OperatorError, Workload


def load_native(op_dir: Path) -> Operator:
    for name in ("reference.py", "input.py", "shapes.json"):
        if not (op_dir / name).is_file():
            raise OperatorError(
                f"{op_dir / name}: missing; a native operator needs reference.py (class "
                "Model), input.py (_make_inputs) and shapes.json"
            )
    shapes_path = op_dir / "shapes.json"
    try:
        shapes = json.loads(shapes_path.read_text())
    except json.JSONDecodeError as exc:
        raise OperatorError(f"{shapes_path}: not valid JSON ({exc})") from None
    if isinstance(shapes, list):  # tolerate a list of {id, init_kwargs, input_kwargs}
        shapes = {str(s.get("id", i)): s for i, s in enumerate(shapes)}
    if not isinstance(shapes, dict) or not shapes:
        raise OperatorError(
            f"{shapes_path}: expected a non-empty object {{{{id: {{{{init_kwargs, input_kwargs}}}}}}}}"
        )
    workloads = []
    for sid, entry in shapes.items():
        if not isinstance(entry, dict):
            raise OperatorError(
                f"{shapes_path}: shape {sid!r} must be an object with init_kwargs/input_kwargs"
            )
        workloads.append(
            Workload(
                id=str(sid),
                init_kwargs=dict(entry.get("init_kwargs") or {}),
                input_kwargs=dict(entry.get("input_kwargs") or {}),
            )
        )
    return Operator(kind="native", name=op_dir.name, directory=op_dir, workloads=workloads)
