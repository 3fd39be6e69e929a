"""Axis resolution for SOL definitions: const, var and expr axes, with a safe arithmetic evaluator.

Expressions come from operator files, so they are parsed with `ast` and only integer arithmetic on known
axis names is allowed: no `eval` of arbitrary code.
"""

from __future__ import annotations

import ast
import math
import operator

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_FUNCS = {
    "min": min,
    "max": max,
    "abs": abs,
    "int": int,
    "ceil": math.ceil,
    "floor": math.floor,
    "cdiv": lambda a, b: -(-a // b),
}


class AxisError(ValueError):
    """An axis definition or value that cannot be resolved."""


def safe_eval(expression: str, names: dict[str, int]) -> int | float:
    """Evaluate an arithmetic expression over `names`; anything but arithmetic raises AxisError."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise AxisError(f"expression {expression!r} is not valid arithmetic: {exc.msg}") from None

    def ev(node: ast.AST) -> int | float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise AxisError(f"expression {expression!r} uses unknown axis {node.id!r}")
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            value = ev(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCS
            and not node.keywords
        ):
            return _FUNCS[node.func.id](*[ev(arg) for arg in node.args])
        raise AxisError(
            f"expression {expression!r} contains {type(node).__name__}: only + - * / // % ** and "
            f"{', '.join(sorted(_FUNCS))} over axis names are allowed"
        )

    return ev(tree)


def resolve_axes(axes_defs: dict[str, dict], values: dict[str, int], where: str) -> dict[str, int]:
    """All axis values of one workload: consts, the workload's vars, then exprs in dependency order."""
    resolved: dict[str, int] = {}
    for name, value in values.items():  # SOL passes every workload axis on (custom generators read them)
        if name not in axes_defs and isinstance(value, int) and not isinstance(value, bool):
            resolved[name] = value
    for name, spec in axes_defs.items():
        kind = spec.get("type")
        if kind == "const":
            if "value" not in spec:
                raise AxisError(f"{where}: const axis {name!r} has no 'value'")
            resolved[name] = int(spec["value"])
        elif kind == "var":
            if name not in values:
                raise AxisError(f"{where}: var axis {name!r} has no value in the workload's 'axes'; add it")
            resolved[name] = int(values[name])
        elif kind != "expr":
            raise AxisError(f"{where}: axis {name!r} has type {kind!r}; use const, var or expr")
    pending = {n: s for n, s in axes_defs.items() if s.get("type") == "expr"}
    while pending:
        progressed = False
        for name, spec in list(pending.items()):
            try:
                value = safe_eval(str(spec.get("expression", "")), resolved)
            except AxisError as exc:
                if "unknown axis" in str(exc) and any(other in str(exc) for other in pending):
                    continue
                raise AxisError(f"{where}: axis {name!r}: {exc}") from None
            resolved[name] = int(value)
            del pending[name]
            progressed = True
        if not progressed:
            raise AxisError(f"{where}: expr axes {sorted(pending)} depend on each other or on unknown axes")
    return resolved
