#!/usr/bin/env python3
"""Mutation testing of the verdict-deciding code: does the suite fail when the code is wrong?

`python3 scripts/mutation_test.py` (or `--target verdict`, `--list`) mutates each target module one site at
a time, runs only that module's fast unit tests against the mutant, and reports the score and every
mutant the tests did not kill. A small runner of our own instead of mutmut: mutmut 3 needs the project
copied into its `mutants/` tree with trampolines, which our `harness` package (imported both as
`aka_graph.tools.evaluator.harness` and, inside sandbox jobs, as `harness`) does not survive cleanly.

How it works: the repository's `aka_graph/` and `tests/` are copied to a scratch directory once; for each
mutant the target file there is rewritten (AST-level: one operator, constant, call or branch changed) and
a forked child (heavy imports such as torch already loaded in the parent, nothing of `aka_graph`) runs
the target's test files: by default by calling every test function directly with each of its
@pytest.mark.parametrize cases (and `tmp_path` / `sol_fixtures`), ~10x less CPU than a pytest session
per mutant; `--pytest` (or a test needing anything else) runs them under pytest with `-x`. The unmutated
module must pass under both. Any failure -> killed; a timeout also counts as killed.
The original file is restored after each mutant. The source tree is never touched.

Mutation operators: comparison (`<`<->`<=`, `>`<->`>=`, `<`<->`>`, `==`<->`!=`, `in`<->`not in`,
`is`<->`is not`), arithmetic (`+`<->`-`, `*`<->`/`, `//`->`/`, `**`->`*`), boolean (`and`<->`or`,
`not x`->`x`, unary minus dropped), numeric constants (n -> n+1; 0.0 -> 1.0; x -> x*2 for floats),
`True`<->`False`, builtins (`any`<->`all`, `min`<->`max`, `sorted`->`list`), an `if`/`elif` test ->
`False` (the branch removed), a bare call statement -> `pass` (the side effect dropped), a string returned
or compared -> another string (routing targets). Docstrings, f-strings and message strings are not
mutated: a changed message is not a wrong verdict.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Target:
    name: str
    module: str  # path relative to the repository root
    tests: tuple[str, ...]
    functions: tuple[str, ...] = ()  # mutate only inside these functions (empty: the whole module)


TARGETS = (
    Target(
        "verdict",
        "aka_graph/tools/records/verdict.py",
        ("tests/tools/records/test_verdict.py", "tests/tools/records/test_verdict_mutants.py"),
    ),
    Target("edges", "aka_graph/edges.py", ("tests/test_edges.py", "tests/test_edges_mutants.py")),
    Target(
        "numerics",
        "aka_graph/tools/evaluator/harness/numerics.py",
        (
            "tests/tools/evaluator/harness/test_numerics.py",
            "tests/tools/evaluator/harness/test_numerics_mutants.py",
        ),
    ),
    Target(
        "finite_path",  # a piece of finite elements judged without masks: the masked path's verdict
        "aka_graph/tools/evaluator/harness/numerics.py",
        (
            "tests/tools/evaluator/harness/test_numerics_finite_path.py",
            "tests/tools/evaluator/harness/test_numerics.py",
        ),
        functions=("Tally._add_finite", "Tally._gross"),
    ),
    Target(
        "cpu_budget",  # when a default CPU evaluation stops after the probe's first reference calls
        "aka_graph/tools/evaluator/harness/cpu_budget.py",
        ("tests/tools/evaluator/harness/test_cpu_budget.py",),
    ),
    Target(
        "cpu_budget_session",  # which calls the session judges the budget on, and which evaluations
        "aka_graph/tools/evaluator/harness/session.py",
        ("tests/tools/evaluator/harness/test_cpu_budget.py",),
        functions=("Session._cpu_budget",),
    ),
    Target(
        "compute_device",  # where a judgement runs when the parent keeps a large tensor in host memory
        "aka_graph/tools/evaluator/harness/numerics.py",
        ("tests/tools/evaluator/harness/test_host_kept.py",),
        functions=("compute_device",),
    ),
    Target(
        "seed_shaped_reference",  # which sets a seed-shaped operator's reference is timed on
        "aka_graph/tools/evaluator/harness/refcache.py",
        ("tests/tools/evaluator/harness/test_refcache.py",),
        functions=("reference_timings", "_all_on_own_sets", "own_set_timings"),
    ),
    Target(
        "own_set_rounds",  # which sets a round's timed calls ran on (a call per set, a graph's copies)
        "aka_graph/tools/evaluator/harness/modes.py",
        ("tests/tools/evaluator/harness/test_layout_change.py",),
        functions=("timed_on",),
    ),
    Target(
        "reference_on_own_sets",  # the reference timed on a kernel's own sets, as the kernel was
        "aka_graph/tools/evaluator/harness/trusted.py",
        (
            "tests/tools/evaluator/harness/test_reference_on_own_sets.py",
            "tests/tools/evaluator/harness/test_host_cache_flush.py",
        ),
        functions=("Reference.time_on_sets", "Reference._host_round", "Reference._gpu_round"),
    ),
    Target(
        "burst_set_sizes",  # a disagreeing burst weighed by the sizes of its sets against the round's
        "aka_graph/tools/evaluator/harness/spotcheck.py",
        ("tests/tools/evaluator/harness/test_burst_set_sizes.py",),
        functions=("set_scale", "_bytes_ratio", "_work_ratio"),
    ),
    Target(
        "host_round_shapes",  # a host round on sets of other shapes makes the operator seed-shaped
        "aka_graph/tools/evaluator/harness/modes.py",
        ("tests/tools/evaluator/harness/test_layout_change.py",),
        functions=("_timed_on_other_shapes",),
    ),
    Target(
        "same_bits",
        "aka_graph/tools/evaluator/harness/runner.py",
        ("tests/tools/evaluator/harness/test_numerics_mutants.py",),
        functions=("same_bits",),
    ),
)

CMP_SWAPS: dict[type, tuple[type, ...]] = {
    ast.Lt: (ast.LtE, ast.Gt),
    ast.LtE: (ast.Lt, ast.GtE),
    ast.Gt: (ast.GtE, ast.Lt),
    ast.GtE: (ast.Gt, ast.LtE),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
}
BIN_SWAPS: dict[type, tuple[type, ...]] = {
    ast.Add: (ast.Sub,),
    ast.Sub: (ast.Add,),
    ast.Mult: (ast.Div,),
    ast.Div: (ast.Mult,),
    ast.FloorDiv: (ast.Div,),
    ast.Pow: (ast.Mult,),
    ast.Mod: (ast.Mult,),
    ast.BitAnd: (ast.BitOr,),
    ast.BitOr: (ast.BitAnd,),
}
CALL_SWAPS = {"any": "all", "all": "any", "min": "max", "max": "min", "sorted": "list"}


@dataclass(frozen=True)
class Mutation:
    index: int
    line: int
    description: str


def _docstring_ids(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _string_sites(tree: ast.AST) -> set[int]:
    """Strings that are returned or compared (routing targets, modes): the only strings worth mutating."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        values: list[ast.AST] = []
        if isinstance(node, ast.Return) and node.value is not None:
            values = [node.value]
            if isinstance(node.value, ast.IfExp):
                values = [node.value.body, node.value.orelse]
        elif isinstance(node, ast.Compare):
            values = [node.left, *node.comparators]
        for value in values:
            elts = value.elts if isinstance(value, ast.Tuple | ast.List | ast.Set) else [value]
            ids.update(id(e) for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return ids


def named_functions(tree: ast.Module, functions: tuple[str, ...]) -> list[ast.AST]:
    """The named top-level functions and `Class.method`s, each that exists (the whole module when none is
    named)."""
    if not functions:
        return [tree]
    found: list[ast.AST] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in functions:
            found.append(node)
        elif isinstance(node, ast.ClassDef):
            found += [
                m
                for m in node.body
                if isinstance(m, ast.FunctionDef) and f"{node.name}.{m.name}" in functions
            ]
    return found


def _in_functions(tree: ast.Module, functions: tuple[str, ...]) -> set[int]:
    """ids of every node inside the named functions (all nodes when none are named)."""
    return {id(n) for root in named_functions(tree, functions) for n in ast.walk(root)}


def _sites(tree: ast.Module, functions: tuple[str, ...]) -> Iterator[tuple[ast.AST, str, object]]:
    """(node, description, replacement-spec) for every mutation, in a fixed order."""
    docstrings, strings, allowed = _docstring_ids(tree), _string_sites(tree), _in_functions(tree, functions)
    in_fstring = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in ast.walk(n)}
    annotations = {
        id(v)
        for n in ast.walk(tree)
        for ann in (
            [getattr(n, "annotation", None), getattr(n, "returns", None)]
            if isinstance(n, ast.arg | ast.AnnAssign | ast.FunctionDef)
            else []
        )
        if ann is not None
        for v in ast.walk(ann)
    }
    for node in ast.walk(tree):
        if id(node) not in allowed or id(node) in annotations:
            continue
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                for new in CMP_SWAPS.get(type(op), ()):
                    yield node, f"{type(op).__name__} -> {new.__name__}", ("cmp", i, new)
        elif isinstance(node, ast.BinOp | ast.AugAssign):
            for new in BIN_SWAPS.get(type(node.op), ()):
                yield node, f"{type(node.op).__name__} -> {new.__name__}", ("bin", new)
        elif isinstance(node, ast.BoolOp):
            new = ast.Or if isinstance(node.op, ast.And) else ast.And
            yield node, f"{type(node.op).__name__} -> {new.__name__}", ("bool", new)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub | ast.Invert):
            yield node, f"drop {type(node.op).__name__}", ("unary",)
        elif isinstance(node, ast.Constant) and id(node) not in docstrings and id(node) not in in_fstring:
            value = node.value
            if isinstance(value, bool):
                yield node, f"{value} -> {not value}", ("const", not value)
            elif isinstance(value, int):
                yield node, f"{value} -> {value + 1}", ("const", value + 1)
            elif isinstance(value, float):
                new_value = 1.0 if value == 0.0 else value * 2
                yield node, f"{value} -> {new_value}", ("const", new_value)
            elif isinstance(value, str) and id(node) in strings:
                yield node, f"{value!r} -> 'XX{value}XX'", ("const", f"XX{value}XX")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CALL_SWAPS:
            yield (
                node,
                f"{node.func.id}() -> {CALL_SWAPS[node.func.id]}()",
                ("call", CALL_SWAPS[node.func.id]),
            )
        elif isinstance(node, ast.If):
            yield node, "if-test -> False (branch removed)", ("if",)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            yield node, "call statement -> pass", ("drop",)


class _Apply(ast.NodeTransformer):
    def __init__(self, target_id: int, spec: tuple) -> None:
        self.target_id, self.spec = target_id, spec

    def visit(self, node: ast.AST) -> ast.AST:
        if id(node) != self.target_id:
            return self.generic_visit(node)
        kind = self.spec[0]
        if kind == "cmp":
            node.ops[self.spec[1]] = self.spec[2]()
        elif kind == "bin" or kind == "bool":
            node.op = self.spec[1]()
        elif kind == "unary":
            return node.operand
        elif kind == "const":
            node.value = self.spec[1]
        elif kind == "call":
            node.func = ast.Name(id=self.spec[1], ctx=ast.Load())
        elif kind == "if":
            node.test = ast.Constant(value=False)
        elif kind == "drop":
            return ast.Pass()
        return node


def mutants(source: str, functions: tuple[str, ...]) -> Iterator[tuple[Mutation, str]]:
    tree = ast.parse(source)
    for index, (node, description, spec) in enumerate(list(_sites(tree, functions))):
        line = getattr(node, "lineno", 0)
        # re-walk a fresh copy: locate the same node by its position in the walk order
        fresh = ast.parse(source)
        order = list(ast.walk(tree))
        twin = list(ast.walk(fresh))[order.index(node)]
        mutated = ast.fix_missing_locations(_Apply(id(twin), spec).visit(fresh))
        yield Mutation(index, line, description), ast.unparse(mutated)


FIXTURES = {"tmp_path", "sol_fixtures"}  # the only fixtures the direct runner provides


def _cases(fn: Callable[..., Any]) -> list[dict[str, Any]]:
    """Every parameter combination of a test function's @pytest.mark.parametrize marks."""
    cases: list[dict[str, Any]] = [{}]
    for mark in reversed(getattr(fn, "pytestmark", [])):
        if mark.name != "parametrize":
            continue
        names, values = mark.args[0], mark.args[1]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        rows = []
        for value in values:
            value = value.values if type(value).__name__ == "ParameterSet" else value  # pytest.param()
            row = dict(zip(names, value, strict=True)) if len(names) > 1 else {names[0]: value}
            rows.append(row)
        cases = [{**case, **row} for case in cases for row in rows]
    return cases


def direct_tests(scratch: Path, tests: tuple[str, ...]) -> list[tuple[Callable[..., Any], dict[str, Any]]]:
    """(function, arguments) for every test in the files, or ValueError if one needs a fixture or mark
    this runner does not provide (then pytest runs that target)."""
    import importlib.util
    import inspect

    found = []
    for rel in tests:
        path = scratch / rel
        name = rel.removesuffix(".py").replace("/", ".")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        for attr, fn in vars(module).items():
            if not attr.startswith("test_") or not callable(fn) or getattr(fn, "__module__", "") != name:
                continue
            marks = {m.name for m in getattr(fn, "pytestmark", [])} - {"parametrize", "slow", "timeout"}
            if marks:
                raise ValueError(f"{attr}: marks {marks}")
            for case in _cases(fn):
                extra = [p for p in inspect.signature(fn).parameters if p not in case]
                if set(extra) - FIXTURES:
                    raise ValueError(f"{attr}: fixtures {extra}")
                found.append((fn, case))
    return found


def _run_direct(scratch: Path, tests: tuple[str, ...]) -> int:
    """Call every test function directly (no collection, no plugins): ~10x less CPU than pytest."""
    import inspect

    for fn, case in direct_tests(scratch, tests):
        args = dict(case)
        params = inspect.signature(fn).parameters
        if "tmp_path" in params:
            args["tmp_path"] = Path(tempfile.mkdtemp(prefix="aka_mut_case_"))
        if "sol_fixtures" in params:
            args["sol_fixtures"] = (scratch.parent / "shared" / "fixtures" / "sol-execbench").resolve()
        try:
            fn(**args)
        except BaseException as exc:
            if type(exc).__name__ == "Skipped":
                continue
            return 1
    return 0


def run_tests(scratch: Path, tests: tuple[str, ...], timeout_s: float, direct: bool) -> str:
    """'killed' | 'survived' | 'timeout', running the tests in a forked child with the scratch tree first."""
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.chdir(scratch)
            sys.path.insert(0, str(scratch))
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            if direct:
                os._exit(_run_direct(scratch, tests))
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # 5x less CPU per mutant; none is needed
            import pytest

            code = pytest.main(["-q", "-x", "-p", "no:cacheprovider", *tests])
            os._exit(int(code))
        except BaseException:
            os._exit(99)
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return "survived" if os.waitstatus_to_exitcode(status) == 0 else "killed"
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.02)


def _direct_ok(scratch: Path, tests: tuple[str, ...]) -> bool:
    """Whether the direct runner can run these files (checked in a child: nothing is imported here)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(scratch)
            sys.path.insert(0, str(scratch))
            direct_tests(scratch, tests)
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def make_scratch() -> Path:
    scratch = Path(tempfile.mkdtemp(prefix="aka_mutation_")) / "main"
    scratch.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "results", "workspace*")
    for name in ("aka_graph", "tests"):
        shutil.copytree(REPO / name, scratch / name, ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", scratch / "pyproject.toml")
    shared = REPO.parent / "shared"
    if shared.exists():
        (scratch.parent / "shared").symlink_to(shared)
    return scratch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", action="append", choices=[t.name for t in TARGETS])
    parser.add_argument("--list", action="store_true", help="print the mutants, run nothing")
    parser.add_argument("--pytest", action="store_true", help="run each mutant's tests under pytest")
    parser.add_argument("--timeout", type=float, default=0, help="seconds per mutant (default: 5x baseline)")
    args = parser.parse_args(argv)
    targets = [t for t in TARGETS if not args.target or t.name in args.target]
    for heavy in ("torch", "numpy", "pydantic", "langgraph.graph", "langgraph.types", "pytest"):
        __import__(heavy)  # loaded once in the parent; every forked child shares them
    scratch = make_scratch()
    totals = [0, 0]
    report: list[str] = []
    try:
        for target in targets:
            path = scratch / target.module
            original = path.read_text()
            missing = [t for t in target.tests if not (scratch / t).exists()]
            if missing and not args.list:
                print(f"{target.name}: test files missing: {missing}", file=sys.stderr)
                return 2
            named = named_functions(ast.parse(original), target.functions)
            if target.functions and len(named) != len(target.functions):
                print(f"{target.name}: not every function of {target.functions} is in {target.module}")
                return 2  # a target whose functions moved would mutate nothing and pass
            path.write_text(ast.unparse(ast.parse(original)))  # the baseline runs the unparsed source too
            start = time.monotonic()
            direct = not args.pytest and _direct_ok(scratch, target.tests)
            baseline = "survived" if args.list else run_tests(scratch, target.tests, 600, direct)
            if not args.list and direct and run_tests(scratch, target.tests, 600, False) != "survived":
                baseline = "killed"  # pytest must agree that the unmutated module passes
            base_s = time.monotonic() - start
            if baseline != "survived":
                print(f"{target.name}: the unmutated module fails its tests ({baseline}); fix that first")
                return 1
            timeout = args.timeout or max(20.0, 5 * base_s)
            killed = survived = 0
            for mutation, text in mutants(original, target.functions):
                if args.list:
                    print(f"{target.name}#{mutation.index} line {mutation.line}: {mutation.description}")
                    continue
                path.write_text(text)
                outcome = run_tests(scratch, target.tests, timeout, direct)
                path.write_text(original)
                if outcome == "survived":
                    survived += 1
                    where = f"{target.name}#{mutation.index} line {mutation.line}"
                    line = f"  SURVIVED {where}: {mutation.description}"
                    report.append(line)
                    print(line, flush=True)
                else:
                    killed += 1
            path.write_text(original)
            total = killed + survived
            if total:
                score = 100.0 * killed / total
                print(
                    f"{target.name}: {killed}/{total} killed ({score:.1f}%), baseline tests {base_s:.1f} s",
                    flush=True,
                )
            totals[0] += killed
            totals[1] += total
    finally:
        shutil.rmtree(scratch.parent, ignore_errors=True)
    if totals[1]:
        print(f"TOTAL: {totals[0]}/{totals[1]} killed ({100.0 * totals[0] / totals[1]:.1f}%)")
        print("\n".join(["survivors:", *report]) if report else "no survivors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
