"""Static source policy for candidate kernels, checked by the trusted parent before the worker starts.

Every check inside the worker runs in the candidate's own process, so a candidate that reaches into the
interpreter (sys.modules, stack frames, gc, ctypes, code objects, dynamic attribute access) could
switch them off or edit the timing data. Such constructs have no place in a kernel: any of them is a
REWARD_HACK, reported with file and line, before a single call is made.
"""

from __future__ import annotations

import ast
from pathlib import Path

BANNED_MODULES = frozenset(
    {
        "sys",
        "gc",
        "inspect",
        "ctypes",
        "importlib",
        "builtins",
        "threading",
        "_thread",
        "multiprocessing",
        "subprocess",
        "signal",
        "socket",
        "pickle",
        "marshal",
        "types",
        "code",
        "dis",
        "atexit",
        "faulthandler",
        "resource",
        "pty",
        "fcntl",
        "mmap",
        "shutil",
        "tracemalloc",
        "weakref",
        "concurrent",
        "asyncio",
    }
)
BANNED_CALLS = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "__import__",
        "globals",
        "locals",
        "vars",
        "breakpoint",
        "open",
        "setattr",
        "delattr",
        "input",
        "memoryview",
    }
)
BANNED_ATTRIBUTES = frozenset(
    {
        "_getframe",
        "f_locals",
        "f_back",
        "f_globals",
        "f_builtins",
        "f_code",
        "gi_frame",
        "tb_frame",
        "cr_frame",
        "modules",
        "get_objects",
        "get_referrers",
        "get_referents",
        "settrace",
        "setprofile",
        "__code__",
        "__globals__",
        "__dict__",
        "__builtins__",
        "__subclasses__",
        "__closure__",
        "__defaults__",
        "__kwdefaults__",
        "__func__",
        "__self__",
        "__bases__",
        "__mro__",
        "__getattribute__",
        "__setattr__",
        "__delattr__",
        "__loader__",
        "__spec__",
        "__import__",
        "fork",
        "forkpty",
        "setsid",
        "setpgid",
        "system",
        "popen",
        "kill",
        "killpg",
        "dup",
        "dup2",
        "pipe",
        "putenv",
        "unsetenv",
        "execv",
        "execve",
        "execvp",
        "execl",
        "spawnv",
        "spawnl",
        "posix_spawn",
        "_exit",
        "abort",
        "prctl",
        "write",
        "readlink",
    }
)


def _literal(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def scan_source(source: str, filename: str) -> list[str]:
    """Policy violations in one file as 'file:line: what'."""
    try:
        tree = ast.parse(source, filename)
    except SyntaxError:
        return []  # the compile gate reports it
    found: list[str] = []
    modules = {
        (a.asname or a.name).split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }

    def root(node: ast.AST) -> str | None:
        while isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    def flag(node: ast.AST, what: str) -> None:
        found.append(f"{filename}:{getattr(node, 'lineno', '?')}: {what}")

    for node in ast.walk(tree):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else ([node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
        )
        for target in targets:
            if isinstance(target, ast.Attribute | ast.Subscript) and root(target) in modules:
                flag(node, f"assigns into the module {root(target)!r} (patching library or global state)")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "environ"
            and node.func.attr in ("update", "setdefault", "pop", "popitem", "clear", "__setitem__")
        ):
            flag(node, f"changes os.environ ({node.func.attr})")
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                if name.split(".")[0] in BANNED_MODULES:
                    flag(node, f"imports {name!r}")
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name in BANNED_ATTRIBUTES or alias.name in BANNED_CALLS:
                        flag(node, f"imports {alias.name!r} from {node.module!r}")
        elif isinstance(node, ast.Attribute) and node.attr in BANNED_ATTRIBUTES:
            flag(node, f"uses the attribute {node.attr!r}")
        elif isinstance(node, ast.Name) and node.id in BANNED_CALLS:
            flag(node, f"uses {node.id!r}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
            name = _literal(node.args[1]) if len(node.args) > 1 else None
            on_torch = bool(node.args) and isinstance(node.args[0], ast.Name) and node.args[0].id == "torch"
            if name is None and not on_torch:  # getattr(torch, dtype_name) is the one common idiom
                flag(node, "getattr with a computed attribute name")
            elif name in BANNED_ATTRIBUTES or name in BANNED_CALLS or name in BANNED_MODULES:
                flag(node, f"getattr(..., {name!r})")
    return found


def scan_kernel_dir(kernel_dir: Path) -> list[str]:
    found: list[str] = []
    for path in sorted(Path(kernel_dir).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        found += scan_source(path.read_text(errors="replace"), path.relative_to(kernel_dir).as_posix())
    return found


# Foreign-function doors into the interpreter (numpy.ctypeslib.ctypes.pythonapi, cffi, ...): a string run
# through them escapes any source scan, so the doors themselves are banned.
BANNED_ATTRIBUTES = BANNED_ATTRIBUTES | {
    "ctypes",
    "ctypeslib",
    "pythonapi",
    "PyRun_SimpleString",
    "CDLL",
    "cdll",
    "LoadLibrary",
    "dlopen",
    "cffi",
    "ffi",
    "load_library",
}
BANNED_MODULES = BANNED_MODULES | {"cffi", "numba"}

# Attribute lookups by computed name under another spelling (finding F15: `operator.attrgetter("_get" +
# "frame")(torch.sys)`): the same as a computed `getattr`, which is banned outside the dtype idiom.
BANNED_ATTRIBUTES = BANNED_ATTRIBUTES | {"attrgetter", "methodcaller"}
