"""The layout is the architecture (design §2): these rules keep it so.

- a node module imports no other node module (shared helpers live in `nodes/_common.py`);
- the package has no import cycles between modules (module-level imports; the harness's relative ones
  included), so each layer can be read on its own;
- the GPU-side harness imports only the standard library, torch and itself at module level.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from aka_graph.graph import build_graph

PACKAGE = Path(__file__).resolve().parents[1] / "aka_graph"
HARNESS = PACKAGE / "tools" / "evaluator" / "harness"


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def top_level_imports(path: Path) -> set[str]:
    """Modules imported at module level (not inside functions: those are deliberate late imports)."""
    tree = ast.parse(path.read_text())
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            found.add(stem)
            found.update(f"{stem}.{alias.name}" for alias in node.names)
    return found


def all_imports(path: Path) -> set[str]:
    """Every module `path` imports, late (inside functions) ones included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}


def test_no_node_module_imports_another() -> None:
    nodes = set(build_graph().nodes)
    offenders = []
    for name in nodes:
        path = PACKAGE / "nodes" / f"{name}.py"
        if not path.is_file():
            continue
        imported = {m.split(".")[2] for m in top_level_imports(path) if m.startswith("aka_graph.nodes.")}
        offenders += [f"{name} imports nodes.{other}" for other in imported & (nodes - {name})]
    assert offenders == []


def test_the_package_has_no_import_cycles() -> None:
    known = modules()
    graph = {
        name: {m for m in top_level_imports(path) if m in known and m != name} for name, path in known.items()
    }
    # a package's __init__ importing its own submodule is not a cycle worth reporting
    graph = {n: {m for m in deps if not m.startswith(n + ".")} for n, deps in graph.items()}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycles.append([*stack[stack.index(dep) :], dep])
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_the_fleet_builds_on_the_campaign_runner_never_the_other_way_round_even_late() -> None:
    """The fleet package drives single-host campaigns; the runner and the checkpoint serialisation they
    share must not reach back into it (a late import inside a function included)."""
    for shared in ("runner.py", "checkpoint_serde.py", "context.py", "graph.py", "state.py"):
        assert not any(m.startswith("aka_graph.fleet") for m in all_imports(PACKAGE / shared)), shared


@pytest.mark.parametrize("path", sorted(HARNESS.rglob("*.py")), ids=lambda p: p.name)
def test_the_harness_imports_only_the_standard_library_torch_and_itself(path: Path) -> None:
    allowed = set(sys.stdlib_module_names) | {"torch", "harness", "aka_graph"}
    foreign = {m.split(".")[0] for m in top_level_imports(path)} - allowed
    assert foreign == set(), f"{path.name} imports {foreign} at module level"
