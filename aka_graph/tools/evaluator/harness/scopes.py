"""Which binding a name in a Python source refers to, by Python's scoping rules, for the source policy.

The policy bans the builtins `input`, `open`, `compile`, `vars`... as names. SOL-ExecBench's own
documentation writes `def run(input, weight, eps)`, and a parameter or a local of that name is not the
builtin: flagging it refused honest kernels and real references (round 7). A name refers to a binding of
the file's own when the innermost scope that can see it binds it: the function (parameters, assignments,
imports, loops, `with ... as`, nested defs), a comprehension's targets, or the module. Default values,
decorators and annotations are evaluated in the enclosing scope, and a class body is not visible from the
methods in it, as in Python.
"""

from __future__ import annotations

import ast

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
SCOPES = (*FUNCTIONS, *COMPREHENSIONS, ast.ClassDef, ast.Module)


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a scope's own body, nested scopes' insides excluded (their names, defaults and
    decorators are the scope's own)."""
    out: list[ast.AST] = []
    if isinstance(scope, FUNCTIONS):
        body = scope.body if isinstance(scope.body, list) else [scope.body]
    elif isinstance(scope, COMPREHENSIONS):
        body = list(scope.generators)
    else:
        body = list(scope.body)  # type: ignore[attr-defined]
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, FUNCTIONS):
            args = node.args
            todo += [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
            if not isinstance(node, ast.Lambda):
                todo += node.decorator_list
        elif isinstance(node, ast.ClassDef):
            todo += [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
        elif isinstance(node, COMPREHENSIONS):
            todo.append(node.generators[0].iter)
        else:
            todo += list(ast.iter_child_nodes(node))
    return out


def binds(scope: ast.AST, name: str) -> bool:
    """Whether `scope` itself binds `name` (Python then treats it as local everywhere in that scope)."""
    if isinstance(scope, FUNCTIONS):
        args = scope.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        if any(a is not None and a.arg == name for a in params):
            return True
    nodes = _own_nodes(scope)
    if any(isinstance(n, ast.Global | ast.Nonlocal) and name in n.names for n in nodes):
        return False  # bound in an outer scope: look there
    for node in nodes:
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == name:
            return True
        if isinstance(node, ast.ExceptHandler) and node.name == name:
            return True
    return False


def _scope_holding(child: ast.AST, scope: ast.AST) -> bool:
    """Whether `child` (a direct child of `scope` on the way up from a name) is evaluated inside `scope`
    rather than in the scope around it (a comprehension's first iterable is handled by the caller)."""
    if isinstance(scope, FUNCTIONS):
        return child is scope.body or (isinstance(scope.body, list) and child in scope.body)
    if isinstance(scope, ast.ClassDef):
        return child in scope.body
    return True


def refers_to_own_binding(name: ast.Name, parents: dict[int, ast.AST]) -> bool:
    """Whether the name refers to a binding of the file's own (a parameter, a local, a module-level
    assignment made before) rather than to a builtin.

    A function's (or comprehension's) name is local wherever it is bound in it: unset, it raises rather
    than falls back to the builtin, so any binding there counts. A module's or a class body's name falls
    back to the builtin while unset or after a `del` (red team round 7b: `if False: exec = None`, then
    `exec(...)`), so there only an unconditional top-level binding that comes before the use counts, and
    never for a name the file deletes or declares `global` anywhere."""
    child: ast.AST = name
    node = parents.get(id(name))
    seen_function = False
    while node is not None:
        if isinstance(node, ast.comprehension):
            grand = parents.get(id(node))
            if isinstance(grand, COMPREHENSIONS) and node is grand.generators[0] and child is node.iter:
                child, node = grand, parents.get(id(grand))  # evaluated outside the comprehension
                continue
        if isinstance(node, SCOPES) and _scope_holding(child, node):
            if isinstance(node, ast.ClassDef) and seen_function:
                pass  # a class body is invisible from the functions nested in it
            elif isinstance(node, ast.Module | ast.ClassDef):
                if binds(node, name.id):
                    return _bound_before(node, child, name.id, parents)
            elif binds(node, name.id):
                return True
            seen_function |= isinstance(node, FUNCTIONS)
        child, node = node, parents.get(id(node))
    return False


def _bound_before(
    scope: ast.Module | ast.ClassDef, stmt: ast.AST, name: str, parents: dict[int, ast.AST]
) -> bool:
    """At module or class level: whether `name` is bound by an unconditional top-level statement of
    `scope` before `stmt` (the top-level statement holding the use), and is never deleted, bound by an
    `except ... as` (deleted when the handler ends) or declared global anywhere in the file."""
    tree: ast.AST = scope
    while parents.get(id(tree)) is not None:
        tree = parents[id(tree)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Del):
            return False
        if isinstance(node, ast.ExceptHandler) and node.name == name:
            return False
        if isinstance(node, ast.Global | ast.Nonlocal) and name in node.names:
            return False
    body = scope.body
    at = next((i for i, s in enumerate(body) if s is stmt), len(body))
    return any(_binds_unconditionally(s, name) for s in body[:at])


def _binds_unconditionally(stmt: ast.stmt, name: str) -> bool:
    """Whether a top-level statement always binds `name` when it runs to its end."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return stmt.name == name
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return any((a.asname or a.name.split(".")[0]) == name for a in stmt.names if a.name != "*")
    if isinstance(stmt, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)
    if isinstance(stmt, ast.AnnAssign):
        return stmt.value is not None and isinstance(stmt.target, ast.Name) and stmt.target.id == name
    return False
