"""Which loader an operator directory needs, decided by its files (SOL-ExecBench or native Atrex-Bench).

Kept apart from `opmodel` so the data model imports neither format loader (the loaders import the model).
"""

from __future__ import annotations

from pathlib import Path

from .native_format import load_native
from .opmodel import Operator, OperatorError
from .sol_format import load_sol


def load_operator(op_dir: Path) -> Operator:
    """Detect the format by content and load it."""
    op_dir = Path(op_dir)
    if not op_dir.is_dir():
        raise OperatorError(
            f"{op_dir}: operator directory not found; pass the directory holding the operator"
        )
    if (op_dir / "definition.json").is_file():
        return load_sol(op_dir)
    if (op_dir / "reference.py").is_file():
        return load_native(op_dir)
    raise OperatorError(
        f"{op_dir}: neither a SOL-ExecBench operator (definition.json + workload.jsonl) nor a native "
        "Atrex-Bench operator (reference.py + input.py + shapes.json); point --op-dir at one"
    )
