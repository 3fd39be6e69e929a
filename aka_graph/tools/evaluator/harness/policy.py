"""Static source policy for candidate kernels, checked by the trusted parent before the worker starts.

Every check inside the worker runs in the candidate's own process, so a candidate that reaches into the
interpreter (sys.modules, stack frames, gc, ctypes, code objects, dynamic attribute access) could
switch them off or edit the timing data. Such constructs have no place in a kernel: any of them is a
REWARD_HACK, reported with file and line, before a single call is made.
"""

from __future__ import annotations

import ast
import re
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

    calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in ALIAS_BANNED and id(node) not in calls:
            flag(node, f"uses {node.id!r} as a value (an alias escapes the name checks)")
        if isinstance(node, ast.Call):
            found.extend(f"{filename}:{node.lineno}: {what}" for what in _call_problems(node))
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.extend(f"{filename}:{node.lineno}: {what}" for what in native_source_problems(node.value))
            if _PRIVATE_PATHS.search(node.value) and id(node) not in docstrings:
                flag(node, f"names {node.value[:60]!r} (a module file, /proc, or the operator's own files)")
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else ([node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
        )
        if isinstance(node, ast.Delete):
            targets = list(node.targets)
        for target in _flatten(targets):
            if isinstance(target, ast.Attribute | ast.Subscript) and root(target) in modules:
                flag(node, f"assigns into the module {root(target)!r} (patching library or global state)")
            elif isinstance(target, ast.Attribute) and root(target) not in ("self", "cls"):
                # `T = torch.Tensor; T.clone = ...`: an alias of a module, class or function patched
                flag(node, f"assigns the attribute {target.attr!r} of {root(target) or 'an expression'!r}")
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
            if isinstance(node, ast.ImportFrom):  # `from torch import multiprocessing` names it too
                names += [f"{node.module}.{a.name}" for a in node.names if node.module]
            for name in names:
                dotted = name.split(".")
                if dotted[0] in BANNED_MODULES or any(
                    ".".join(dotted[: i + 1]) in BANNED_DOTTED for i in range(len(dotted))
                ):
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


def _flatten(targets: list[ast.expr]) -> list[ast.expr]:
    out: list[ast.expr] = []
    for t in targets:
        if isinstance(t, ast.Tuple | ast.List):
            out += _flatten(list(t.elts))
        elif isinstance(t, ast.Starred):
            out += _flatten([t.value])
        else:
            out.append(t)
    return out


def _call_problems(node: ast.Call) -> list[str]:
    """Calls that load code or objects from data (a pickle runs code when loaded)."""
    found = []
    for kw in node.keywords:
        if kw.arg in ("weights_only", "allow_pickle", "pickle_module"):
            found.append(f"passes {kw.arg}= (loading pickled objects can run code)")
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "load":
        base = func.value
        if isinstance(base, ast.Name) and base.id in ("torch", "np", "numpy"):
            found.append(f"calls {base.id}.load (deserialising objects; kernels compute, they do not load)")
    return found


# Python's C API and pybind11's interpreter doors inside C/C++ source (load_inline strings, .cpp files):
# a native extension that calls back into the interpreter escapes every Python-level check.
_NATIVE_DOORS = re.compile(
    r"\bPy(Run|Import|Eval|Object_SetAttr|Object_GetAttr|Dict|Sys|Frame|Code|Module|Object_Call|"
    r"Capsule|Thread|GILState|Marshal|Unicode)\w*|Python\.h|\bpy::(module_?|eval|exec|globals|getattr|"
    r"setattr|hasattr|import|reinterpret_\w+|handle|object|cast|exec_file|eval_file|cpp_function|"
    r"dict|str|list|tuple|gil_scoped)|pybind11::(module_?|eval|exec|globals|getattr|setattr|import|handle|"
    r"object|cast|dict)|\b(dlopen|dlsym|fork|vfork|execv\w*|execl\w*|posix_spawn\w*|system|popen|kill|"
    r"prctl|ptrace|setenv|putenv|clone|syscall)\s*\("
)
NATIVE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hpp", ".hh", ".inl")


# String literals no kernel needs: a module file to write and import at run time, /proc (the parent's
# command line, other processes), the operator's files (every workload's shapes, also private ones).
_PRIVATE_PATHS = re.compile(
    r"(^[\w./-]*\.(py|pyc|so|pth)$)|(^|/)proc/|workload\.jsonl|definition\.json|shapes\.json"
)


def native_source_problems(text: str) -> list[str]:
    """Interpreter doors named in C/C++ source text (only text that looks like C/C++ is searched)."""
    if "(" not in text or ("{" not in text and "#include" not in text and "::" not in text):
        return []
    hits = sorted({m.group(0).strip().rstrip("(").strip() for m in _NATIVE_DOORS.finditer(text)})
    return [f"native source reaches the interpreter or the OS: {', '.join(hits[:5])}"] if hits else []


def scan_kernel_dir(kernel_dir: Path) -> list[str]:
    """Every .py file (and every C/C++ source) under the kernel directory."""
    found: list[str] = []
    for path in sorted(Path(kernel_dir).rglob("*")):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        rel = path.relative_to(kernel_dir).as_posix()
        if path.suffix == ".py":
            found += scan_source(path.read_text(errors="replace"), rel)
        elif path.suffix in NATIVE_SUFFIXES:
            found += [f"{rel}: {what}" for what in native_source_problems(path.read_text(errors="replace"))]
    from .languages.solution import inline_sources  # solution.json `content` the worker writes out and runs

    for rel, text in inline_sources(Path(kernel_dir)).items():
        if (Path(kernel_dir) / rel).is_file():
            continue  # the file on disk is what runs, and was scanned above
        if rel.endswith(".py"):
            found += scan_source(text, f"solution.json:{rel}")
        elif rel.endswith(NATIVE_SUFFIXES):
            found += [f"solution.json:{rel}: {what}" for what in native_source_problems(text)]
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

# Issue 13, class 3: routes that walked around the list above.
BANNED_MODULES = BANNED_MODULES | {
    "pkgutil",  # resolve_name("gc:get_objects") imports by string
    "runpy",
    "zipimport",
    "imp",
    "copyreg",
    "shelve",
    "dill",
    "cloudpickle",
    "joblib",
    "tempfile",
}
BANNED_DOTTED = frozenset(
    {
        "torch.multiprocessing",
        "torch.library",  # overriding aten operators (aten::equal) that checks may rely on
        "torch.serialization",
        "torch.package",
        "torch.distributed",
        "torch._dynamo.eval_frame",
        "numpy.ctypeslib",
    }
)
BANNED_ATTRIBUTES = BANNED_ATTRIBUTES | {
    "resolve_name",
    "posix_spawnp",
    "spawnve",
    "spawnvp",
    "spawnvpe",
    "spawnle",
    "spawnlp",
    "spawnlpe",
    "execle",
    "execlp",
    "execlpe",
    "execvpe",
    "vfork",
    "register_at_fork",
    "unshare",
    "setns",
    "chmod",
    "lchmod",
    "fchmod",
    "chown",
    "write_text",  # writing a helper module beside kernel.py (then importing it)
    "write_bytes",
    "open",
    "touch",
    "multiprocessing",
    "library",
    "Library",
    "serialization",
    "_weights_only_unpickler",
    "getppid",
    "getpgid",
    "cmdline",
    "__class__",
    "__getattr__",
    "__reduce__",
    "__reduce_ex__",
    "__setstate__",
}
ALIAS_BANNED = frozenset({"getattr", "setattr", "delattr"})
