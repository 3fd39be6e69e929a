"""Anti-gaming checks run in the untrusted worker around the candidate (design §5).

Identity of timers / sync / graph / event functions captured before the candidate is imported,
reserved environment variables, threads left running, output types, and aliasing of outputs with
inputs or earlier outputs. Each check returns human-readable violations (-> REWARD_HACK).

What these checks cannot do: they run in the kernel's own interpreter, so a kernel free to reach the
interpreter can edit their records in place or swap the code of the check itself (red team round 11b,
with the source policy off: the dispatch tables' texts, the interpreter hooks' record, the check's
`__code__`). The static source policy (policy.py) refuses the means (`sys`, `gc`, `__code__`,
torch.library on aten); the parent's own checks (its burst, the timed outputs checked after the fact,
re-validation, /proc) hold regardless. These are defence in depth behind the policy.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
import types
from typing import Any

import torch
from torch.utils._device import DeviceContext

from . import native_builds
from .faults import FatalHandlers, own_directories
from .library_settings import library_env_value
from .runner import ReturnError
from .spans import span

RESERVED_PREFIXES = (
    "TRITON_",
    "CUDA_",
    "TORCH",
    "PYTORCH_",
    "NCCL_",
    "CUBLAS",
    "CUDNN",
    "NVIDIA_",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "OMP_",
    "MKL_",
    "PYTHON",
)


def _watched() -> list[tuple[str, Any, str]]:
    items: list[tuple[str, Any, str]] = []
    for attr in (
        "perf_counter",
        "perf_counter_ns",
        "time",
        "time_ns",
        "monotonic",
        "monotonic_ns",
        "process_time",
        "process_time_ns",
        "sleep",
    ):
        items.append((f"time.{attr}", time, attr))
    cuda = torch.cuda
    for attr in (
        "synchronize",
        "Event",
        "CUDAGraph",
        "graph",
        "Stream",
        "current_stream",
        "is_available",
        "get_device_name",
        "set_stream",
        "stream",
    ):
        items.append((f"torch.cuda.{attr}", cuda, attr))
    for attr in ("record", "elapsed_time", "synchronize", "query", "wait"):
        items.append((f"torch.cuda.Event.{attr}", cuda.Event, attr))
    for attr in ("replay", "capture_begin", "capture_end", "instantiate"):
        if hasattr(cuda.CUDAGraph, attr):
            items.append((f"torch.cuda.CUDAGraph.{attr}", cuda.CUDAGraph, attr))
    for attr in ("synchronize", "wait_stream", "query"):
        items.append((f"torch.cuda.Stream.{attr}", cuda.Stream, attr))
    for attr in (
        "clone",
        "copy_",
        "fill_",
        "equal",
        "float",
        "to",
        "cpu",
        "contiguous",
        "data_ptr",
        "untyped_storage",
        "__torch_function__",
        "zero_",
        "item",
        "numel",
        "view",
    ):
        items.append((f"torch.Tensor.{attr}", torch.Tensor, attr))
    for attr in (
        "equal",
        "allclose",
        "isnan",
        "isfinite",
        "where",
        "save",
        "load",
        "empty",
        "empty_like",
        "randn",
        "randint",
        "manual_seed",
        "Generator",
        "abs",
        "zeros_like",
        "ones_like",
    ):
        items.append((f"torch.{attr}", torch, attr))
    for attr in ("enumerate", "Thread", "active_count"):
        items.append((f"threading.{attr}", threading, attr))
    # what the watched torch.cuda functions call in turn (red team round 15 replaced torch._C's sync, through
    # a compiler config's `torch` global, so that the harness's timing syncs returned at once)
    for attr in ("_cuda_synchronize", "_cuda_getCurrentStream", "_cuda_setStream"):
        if hasattr(torch._C, attr):
            items.append((f"torch._C.{attr}", torch._C, attr))
    items.append(("os.environ", os, "environ"))
    return items + native_builds.watched()  # cpp_extension's entry points, where the worker wrapped them


def _watched_namespaces() -> tuple[dict[str, type], dict[str, Any]]:
    """The classes whose members the harness's untimed steps look up (a tensor's methods, the grad and
    inference modes it enters around its writes, CUDA events and graphs) and the modules whose functions
    it calls. `_watched` names a few members each; red team round 11 planted `torch.Tensor.is_inference`
    (asked by the harness's input write) and replaced `inference_mode.__exit__`, neither of them listed."""
    cuda = torch.cuda
    classes = {
        "torch.Tensor": torch.Tensor,
        "torch.nn.Parameter": torch.nn.Parameter,
        "torch.inference_mode": torch.inference_mode,
        "torch.no_grad": torch.no_grad,
        "torch.enable_grad": torch.enable_grad,
        "torch.set_grad_enabled": torch.set_grad_enabled,
        "torch._C._InferenceMode": torch._C._InferenceMode,
        "torch.Generator": torch.Generator,
        "torch.cuda.Event": cuda.Event,
        "torch.cuda.Stream": cuda.Stream,
        "torch.cuda.CUDAGraph": cuda.CUDAGraph,
        "torch.cuda.graph": cuda.graph,
    }
    # their bases too: a property on torch.utils._contextlib._DecoratorContextManager wins over what
    # inference_mode keeps on its instance (red team round 11c)
    for klass in list(classes.values()):
        for base in klass.__mro__[1:]:
            if base is not object:
                classes.setdefault(f"{base.__module__}.{base.__qualname__}", base)
    modules = {
        "torch": torch,
        "torch.cuda": cuda,
        "torch.autograd.grad_mode": torch.autograd.grad_mode,
        "torch._jit_internal": torch._jit_internal,  # is_scripting(), asked by inference_mode's __init__
        "torch.utils._contextlib": torch.utils._contextlib,
        "torch.random": torch.random,  # rng.seeded's get/set_rng_state (red team round 15)
    }
    return classes, modules


class Namespaces:
    """The watched classes' and modules' members as they were before the kernel loaded. A class's member
    added or removed is a finding (a member added to torch.Tensor shadows torch._C.TensorBase's method of
    that name, a plain value its property), and so is code replaced: a function or descriptor, before or
    after. State torch keeps in them is not (torch.cuda.graph.default_capture_stream is set by the first
    capture, torch.cuda._initialized by CUDA's start). A module's member added is no finding either
    (torch loads submodules lazily: `torch._dynamo` appears with the first torch.compile), nor torch's own
    wrapping (torch_wrapper_of: dynamo's of torch.manual_seed)."""

    def __init__(self) -> None:
        classes, modules = _watched_namespaces()
        self.classes = {name: (klass, dict(vars(klass))) for name, klass in classes.items()}
        self.modules = {name: (module, dict(vars(module))) for name, module in modules.items()}

    def changed(self) -> list[str]:
        """Members found changed, sorted (it runs before every untimed step: the ~2,000 members are walked
        once in dict order and only the findings are sorted)."""
        found = []
        for name, (owner, before) in [*self.classes.items(), *self.modules.items()]:
            now = vars(owner)
            for key, old in before.items():
                new = now.get(key, _MISSING)
                if new is old or torch_wrapper_of(new, old):
                    continue
                if new is _MISSING or _code_like(old) or _code_like(new):
                    found.append(f"{name}.{key}")
            if name in self.classes:  # a member added to a class (to a module: torch's lazy submodules)
                found += [f"{name}.{key}" for key in now.keys() - before.keys()]
        return sorted(found)


def _code_like(value: Any) -> bool:
    """A function, a class or a descriptor (property, classmethod): what runs when the member is used."""
    return callable(value) or hasattr(type(value), "__get__")


def _lookup(owner: Any, attr: str) -> Any:
    """The stored attribute (class dicts along the MRO, so classmethods compare by identity)."""
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if attr in vars(klass):
                return vars(klass)[attr]
        return None
    return getattr(owner, attr, None)


_TORCH_DIR = os.path.realpath(os.path.dirname(torch.__file__)) + os.sep
# attributes through which torch's own wrappers reach the function they wrap (functools.wraps, and the
# per-function cache of torch._compile._disable_dynamo's wrapper)
_WRAPPER_LINKS = ("__wrapped__", "__dynamo_disable", "_torchdynamo_orig_callable")
_PLAIN = (bool, int, float, str, bytes, type(None))


def _torch_code(fn: Any) -> bool:
    """A plain Python function of torch's own: its globals are a loaded torch module's, whose file lies in
    torch's installation, and its code is the code that file compiles to (a function built from a
    candidate's code with a borrowed file name, or with torch's code over other globals, is not)."""
    if not isinstance(fn, types.FunctionType) or not isinstance(fn.__code__, types.CodeType):
        return False
    module = sys.modules.get(str(fn.__globals__.get("__name__")))
    filename = getattr(module, "__file__", None)
    if module is None or vars(module) is not fn.__globals__ or not isinstance(filename, str):
        return False
    code = fn.__code__
    if not _real(filename).startswith(_TORCH_DIR) or _real(code.co_filename) != _real(filename):
        return False
    shipped = _shipped_codes(filename).get((code.co_name, code.co_firstlineno), [])
    return any(code == c for c in shipped)  # (code equality compares the code itself, not its file name)


@functools.lru_cache(maxsize=256)
def _real(filename: str) -> str:
    """Cached: the check runs after every call of the candidate (a realpath costs ~10 us)."""
    return os.path.realpath(filename)


@functools.lru_cache(maxsize=16)
def _shipped_codes(filename: str) -> dict[tuple[str, int], list[types.CodeType]]:
    """Every code object a torch source file compiles to, by name and first line (compiled once, only
    when a watched function was replaced: ~ms per file)."""
    try:
        with open(filename, encoding="utf-8") as f:
            top = compile(f.read(), filename, "exec", dont_inherit=True)
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[tuple[str, int], list[types.CodeType]] = {}
    todo = [top]
    while todo:
        code = todo.pop()
        found.setdefault((code.co_name, code.co_firstlineno), []).append(code)
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return found


def torch_wrapper_of(now: Any, original: Any, limit: int = 32) -> bool:
    """Whether `now`, which replaced `original`, is only torch's own wrapping of it: `import torch._dynamo`
    (pulled in by torch.compile, custom ops, triton_op) replaces torch.manual_seed with
    torch._disable_dynamo(torch.manual_seed), which the identity check read as a patch (a false alarm).

    Everything reachable from `now` through closures and wrapper links must be `original` itself, a
    function whose code lies in torch's installation, a plain value or a torch-defined object, and the
    chain must reach `original`. A candidate's own function anywhere in it (a wrapper of its own, or its
    function wrapped by torch's helper, or planted in the wrapper's cache attribute) fails."""
    if not _torch_code(now):
        return False
    todo, seen, reached = [now], set(), False
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if len(seen) > limit:
            return False
        if item is original:
            reached = True
        elif isinstance(item, _PLAIN):
            continue
        elif _torch_code(item):
            todo += [c.cell_contents for c in item.__closure__ or () if _filled(c)]
        elif isinstance(item, types.FunctionType) or not type(item).__module__.startswith("torch"):
            return False  # a function (or object) of anybody else's
        todo += [getattr(item, link) for link in _WRAPPER_LINKS if hasattr(item, link)]
    return reached


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018  (an empty cell raises)
    except ValueError:
        return False
    return True


_DEVICE_CONTEXT = dict(vars(DeviceContext))  # before any candidate: its hook as torch ships it


def _default_device(mode: Any) -> bool:
    """torch.set_default_device's own mode, untouched (an honest kernel may call it at import): exactly
    torch's DeviceContext class with its methods as shipped, no hook of the instance's own, a real
    device. A subclass or a replaced hook (a red-team cheat) is any other mode."""
    return (
        type(mode) is DeviceContext
        and "__torch_function__" not in vars(mode)
        and all(vars(DeviceContext).get(k) is v for k, v in _DEVICE_CONTEXT.items())
        and set(vars(DeviceContext)) == set(_DEVICE_CONTEXT)
        and isinstance(vars(mode).get("device"), torch.device)
        and vars(mode)["device"].type in ("cpu", "cuda")
    )


def active_modes() -> list[str]:
    """The torch function and dispatch modes active now: a mode sees every torch call made under it, the
    harness's own included (a candidate that entered one at import moved its work into the harness's
    untimed reads). The harness itself has none active in the worker where it looks."""
    function_modes = [torch._C._get_function_stack_at(i) for i in range(torch._C._len_torch_function_stack())]
    found = [f"torch function mode {type(m).__name__}" for m in function_modes if not _default_device(m)]
    found += [
        f"torch dispatch mode {type(torch._C._get_dispatch_stack_at(i)).__name__}"
        for i in range(torch._C._len_torch_dispatch_stack())
    ]
    return found


def modes_violation() -> list[str]:
    """The violation for modes active now (none: []); cheap (two C calls), so the harness can look
    between timed calls too, where its own reads of the outputs happen."""
    modes = active_modes()
    return [f"{', '.join(modes)} left active (it sees every torch call the harness makes)"] if modes else []


class Sentinel:
    """Remembers the identity of every watched function (and the harness's own) before the import."""

    def __init__(self, kernel_dir: str | os.PathLike[str] | None = None) -> None:
        """`kernel_dir`: the candidate's files, whose own audit hooks are refused (veto_audit_hooks)."""
        self.before = {name: _lookup(owner, attr) for name, owner, attr in _watched()}
        # every name a harness module binds: its functions and its settings (a kernel that set
        # `faults.FATAL_SIGNALS = ()` switched a check off, red team round 10)
        self.bindings = {
            (mod_name, key): value
            for mod_name, module in list(sys.modules.items())
            if mod_name.split(".")[-2:-1] == ["harness"] or mod_name.startswith("harness.")
            for key, value in vars(module).items()
            if not (key.startswith("__") and key.endswith("__"))
        }
        self.harness = {name: value for name, value in self.bindings.items() if callable(value)}
        # methods of the harness's own classes and the code objects behind every harness function
        self.members = {
            (mod_name, key, attr): member
            for (mod_name, key), value in self.harness.items()
            if isinstance(value, type) and value.__module__ == mod_name
            for attr, member in vars(value).items()
        }
        self.codes = {
            name: fn.__code__
            for name, fn in [*self.harness.items(), *self.members.items()]
            if hasattr(fn, "__code__")
        }
        self.env = reserved_env()
        self.threads = {t.ident for t in threading.enumerate()}
        self.hooks = interpreter_hooks()
        self.dispatch = DispatchTables()
        self.namespaces = Namespaces()
        self.faults = FatalHandlers(own_directories(kernel_dir))
        veto_audit_hooks(kernel_dir)
        _CURRENT[:] = [self]

    def violations(self) -> list[str]:
        found = []
        for name, owner, attr in _watched():
            now = _lookup(owner, attr)
            if now is not self.before[name] and not torch_wrapper_of(now, self.before[name]):
                found.append(f"{name} was replaced (monkey-patched timer/sync/harness function)")
        for (mod_name, key), value in self.harness.items():
            module = sys.modules.get(mod_name)
            if module is None or vars(module).get(key) is not value:
                found.append(f"harness function {mod_name}.{key} was replaced")
        for (mod_name, key, attr), member in self.members.items():
            if vars(self.harness[(mod_name, key)]).get(attr) is not member:
                found.append(f"harness method {key}.{attr} was replaced")
        for name, code in self.codes.items():
            fn = self.harness.get(name) or self.members.get(name)  # type: ignore[call-overload]
            if getattr(fn, "__code__", None) is not code:
                found.append(f"the code of harness function {name[-1]} was replaced")
        env = reserved_env()
        changed = sorted(
            k
            for k in set(env) | set(self.env)
            if env.get(k) != self.env.get(k) and not _library_setting(k, self.env.get(k), env.get(k))
        )
        if changed:
            found.append(f"reserved environment variables changed: {', '.join(changed)}")
        extra = [t for t in threading.enumerate() if t.ident not in self.threads and t.is_alive()]
        if extra:
            found.append(f"threads left running: {', '.join(t.name for t in extra)}")
        found += self.between_steps()
        return found

    def rebound(self) -> list[str]:
        """Settings of the harness's modules bound to another object than before the kernel loaded (the
        harness never rebinds its module globals: no `global` statement in it; `violations` names replaced
        functions on their own)."""
        return [
            f"{mod_name}.{key}"
            for (mod_name, key), value in self.bindings.items()
            if not callable(value) and getattr(sys.modules.get(mod_name), key, _MISSING) is not value
        ]

    def between_steps(self, dispatch: bool = True) -> list[str]:
        """The checks cheap enough for every untimed step of the harness (bench.py runs them before it
        reads or writes the kernel's buffers): the interpreter's hooks, torch's dispatch of the ops the
        harness calls, audit hooks, torch modes, the fatal signals' handlers (faults.py). Each is a way to
        run the kernel's code in the harness's own untimed work (red team round 9).
        `dispatch=False` leaves out the dispatch tables, nine tenths of the cost (~5 ms: a dump of 210
        tables); bench.Bench draws which of its per-sample steps compare them (dispatch_due)."""
        with span("w.between_steps"):
            return self._between_steps(dispatch)

    def _between_steps(self, dispatch: bool = True) -> list[str]:
        hooks = interpreter_hooks()
        found = [
            f"{what} was changed: the interpreter runs code of the kernel's between the harness's steps"
            for what, value in hooks.items()
            if value != self.hooks.get(what)
        ]
        rebound = self.rebound()
        if rebound:
            found.append(f"the harness's own settings were changed: {', '.join(rebound[:6])}")
        patched = self.namespaces.changed()
        if patched:
            found.append(
                f"torch's {', '.join(patched[:6])} was added, replaced or removed: the harness's own steps "
                "would run the kernel's code"
            )
        changed = self.dispatch.changed() if dispatch else []
        if changed:
            found.append(
                f"torch's dispatch of {', '.join(changed[:6])} was changed (a kernel registered for torch's "
                "own operators): the harness's own tensor operations would run the kernel's code"
            )
        if native_builds.REFUSED:
            found.append(f"the kernel built C++ the scan refuses at run time: {native_builds.REFUSED[0]}")
        if AUDIT_ATTEMPTS:
            found.append(
                "the kernel added an audit hook (sys.addaudithook): code run on the harness's events"
            )
        found += self.faults.changed()
        self.faults.reclaim()  # after naming them: a handler hidden behind a runtime library's is gone too
        found += modes_violation()
        return found


# The aten operators the harness runs on the kernel's buffers in its untimed steps (writing fresh inputs,
# poisoning outputs, cloning kept outputs, fingerprints, re-validation) and while drawing inputs, every
# overload of each (watched_overloads); test_watched_ops.py records what a worker really runs. A kernel
# registered for one of them (`TORCH_LIBRARY_IMPL(aten, AutogradCPU, m)`, `torch.library.impl`), or a
# backend fallback under them, runs its code there: red team round 9b precomputed in the harness's copy_.
WATCHED_OPS = tuple(
    f"aten::{name}"
    for name in [
        "copy_",
        "clone",
        "detach",
        "detach_",
        "alias",
        "lift_fresh",
        "_to_copy",
        "to",
        "contiguous",
        "empty",
        "empty_strided",
        "empty_like",
        "zeros_like",
        "ones_like",
        "full_like",
        "new_empty",
        "new_empty_strided",
        "zero_",
        "fill_",
        "mul_",
        "mul",
        "add_",
        "add",
        "sub",
        "div",
        "neg",
        "abs",
        "roll",
        "view",
        "reshape",
        "_reshape_alias",
        "as_strided",
        "expand",
        "select",
        "slice",
        "permute",
        "flatten",
        "t",
        "transpose",
        "unsqueeze",
        "squeeze",
        "index",
        "index_put_",
        "index_select",
        "bitwise_xor_",
        "bitwise_xor",
        "bitwise_and",
        "bitwise_not",
        "uniform_",
        "normal_",
        "random_",
        "bernoulli_",
        "exponential_",
        "randn",
        "rand",
        "randint",
        "randperm",
        "normal",
        "arange",
        "full",
        "ones",
        "zeros",
        "cat",
        "stack",
        "eq",
        "ne",
        "equal",
        "isnan",
        "isinf",
        "isfinite",
        "isclose",
        "allclose",
        "where",
        "lt",
        "gt",
        "le",
        "ge",
        "maximum",
        "minimum",
        "max",
        "min",
        "amax",
        "sum",
        "mean",
        "count_nonzero",
        "nonzero",
        "sort",
        "argsort",
        "topk",
        "_local_scalar_dense",
        "item",
        "view_as_real",
        "view_as_complex",
        "resize_",
        "set_",
        "_copy_from",
        "_copy_from_and_resize",
        "from_file",
        "is_same_size",
        "remainder",
        "clamp",
        "narrow",
        # the comparison's every branch and the input fingerprints (test_watched_ops: branch table), and
        # what the CUDA worker ran besides (tests/gpu/test_watched_ops_gpu.py on the H200, round 11)
        "all",
        "any",
        "__and__",
        "__or__",
        "bitwise_or",
        "is_nonzero",
        "result_type",
        "clamp_min",
        "cumsum",
        "pow",
        "square",
        "sqrt",
        "div_",
        "sub_",
        "as_strided_",
        "new_zeros",
        "view_as",
        "resolve_conj",
        "resolve_neg",
        # the comparison's in-place steps (numerics.check_output: its temporaries kept small, round 17)
        "abs_",
        "clamp_min_",
        "masked_fill_",
    ]
)


@functools.cache
def watched_overloads() -> tuple[str, ...]:
    """Every overload of each watched operator as this torch's dispatcher names them (`aten::add.Tensor`,
    `aten::add.Scalar`, ...), bar the `out=` variants, which the harness never calls: a kernel registered
    for an overload nobody listed by hand would run in the harness's steps just the same."""
    every = getattr(torch._C, "_dispatch_get_all_op_names", None)
    if every is not None:
        names = {name for name in every() if name.split(".", 1)[0] in WATCHED_OPS}
    else:  # an older torch: each operator's overload packet lists them
        names = set()
        for op in WATCHED_OPS:
            packet = getattr(torch.ops.aten, op.split("::", 1)[1], None)
            for overload in packet.overloads() if packet is not None else []:
                names.add(op if overload == "default" else f"{op}.{overload}")
    return tuple(sorted(n for n in names if not n.partition(".")[2].endswith("out") and _in_dispatcher(n)))


def _in_dispatcher(name: str) -> bool:
    """Whether the dispatcher has `name` (TorchScript's own overloads, `aten::add.int`, it has not)."""
    try:
        return bool(torch._C._dispatch_dump_table(name))  # "" for a name it does not know
    except RuntimeError:
        return False


def dispatch_tables() -> dict[str, str]:
    """Each watched operator's computed dispatch table as torch prints it (`DispatchTables.changed`;
    watched_overloads holds only names this torch's dispatcher has)."""
    return {op: torch._C._dispatch_dump_table(op) for op in watched_overloads()}


def runtime_entries(table: str) -> tuple[str, ...]:
    """A dispatch table's entries for the keys a real tensor passes through in eager mode: Meta and the
    other tracing keys change when torch.compile loads its registrations, these do not (measured with
    torch.compile, a custom op and torch._refs/_prims/_decomp/_meta_registrations imported)."""
    return tuple(line for line in table.splitlines() if line.split(":", 1)[0] in RUNTIME_KEYS)


class DispatchTables:
    """The watched operators' dispatch as it was before the kernel loaded."""

    def __init__(self) -> None:
        self.text = dispatch_tables()
        self.entries = {op: runtime_entries(t) for op, t in self.text.items()}

    def changed(self) -> list[str]:
        """Watched operators whose eager dispatch differs now (a table whose text is the same is not parsed:
        a check costs ~1.5 ms; one that differs only outside the eager keys is taken as the new text)."""
        found = []
        for op, text in dispatch_tables().items():
            if text == self.text.get(op):
                continue
            if runtime_entries(text) != self.entries.get(op):
                found.append(op)
            else:
                self.text[op] = text
        return found


RUNTIME_KEYS = frozenset(
    [
        "CPU",
        "CUDA",
        "AutogradCPU",
        "AutogradCUDA",
        "AutogradOther",
        "ADInplaceOrView",
        "BackendSelect",
        "Python",
        "PythonTLSSnapshot",
        "PreDispatch",
        "Conjugate",
        "Negative",
        "ZeroTensor",
        "AutocastCPU",
        "AutocastCUDA",
        "Undefined",
    ]
)
_MISSING = object()
_CURRENT: list[Sentinel] = []  # this worker's sentinel (between_steps_violations)
AUDIT_ATTEMPTS: list[str] = []  # files of the kernel's that tried to add an audit hook (refused)
_KERNEL_DIRS: list[str] = []  # where the kernel's own files are (veto_audit_hooks)
_VETO_INSTALLED: list[bool] = []


def _veto(event: str, args: tuple[Any, ...]) -> None:
    if event != "sys.addaudithook" or not _KERNEL_DIRS:
        return
    caller = os.path.realpath(sys._getframe(1).f_code.co_filename)  # who called sys.addaudithook
    if any(caller.startswith(d) for d in _KERNEL_DIRS):
        AUDIT_ATTEMPTS.append(caller)
        raise RuntimeError("the evaluation's worker takes no audit hook of the kernel's")  # not added


def between_steps_violations(dispatch: bool = True) -> list[str]:
    """`Sentinel.between_steps` of this worker's sentinel (the torch modes alone before there is one)."""
    return _CURRENT[0].between_steps(dispatch) if _CURRENT else modes_violation()


DISPATCH_DRAW_IN_256 = 64  # a timed sample's untimed steps compare the dispatch tables 1 time in 4


def dispatch_due(first: bool) -> bool:
    """Whether this per-sample step of a timing loop compares the dispatch tables: always at a loop's first
    step, else 1 time in 4, drawn from the OS (nothing the kernel seeds or reads in the process's RNGs).

    Why not every step: an event-timed workload makes two such steps per sample (30 samples, the burst's
    sets), and the dump of 210 tables each time made ~40 % of some real problems' evaluation (round 18:
    024_vision_rotary 12.2 of 20 s). What the sampling gives up is small: a kernel registered for an
    aten op before timing is found at the first step; one registered and removed between samples must
    be in place for most of the samples to move their median, and is then found with the odds of
    missing it (3/4)^k after k such steps (~1 % at 15); every request still ends with the full check
    (Sentinel.violations), and the parent's own burst times the perturbations from outside."""
    return first or os.urandom(1)[0] < DISPATCH_DRAW_IN_256


def veto_audit_hooks(kernel_dir: str | os.PathLike[str] | None) -> None:
    """Before the kernel is imported: a hook of the harness that refuses every later audit hook added by
    the kernel's own files. An audit hook cannot be removed and no one lists it; red team round 9b's ran
    on the sentinel's own attribute reads, removing a gc callback just before the sentinel looked and
    putting it back after. A library's own (filelock adds one on Python >= 3.12, imported by an honest
    torch.compile: seen on the H200) is left alone: only the direct caller's file is judged."""
    if kernel_dir is not None:
        _KERNEL_DIRS.append(os.path.realpath(kernel_dir) + os.sep)
    if not _VETO_INSTALLED:
        sys.addaudithook(_veto)
        _VETO_INSTALLED.append(True)


def interpreter_hooks() -> dict[str, Any]:
    """The interpreter's own hooks and schedules a kernel could run code from between the harness's steps
    (red team round 9: `gc.set_threshold(1, ...)` plus a `gc.callbacks` entry precomputed the answer at
    every harness allocation after it wrote new inputs). Compared by value: their identities (a new
    callbacks list, the same threshold) are what the kernel changes. torch, Triton and torch.compile
    leave all of them alone. Whether the collector is on is not among them: the worker keeps it off and
    switches it off again at each of its collection points (memory.collect_here), so a kernel's honest
    `gc.disable(); ...; gc.enable()` around its setup is undone there, not called tampering."""
    import gc

    return {
        "gc.callbacks": list(gc.callbacks),
        "gc.get_threshold()": gc.get_threshold(),
        "sys.getprofile()": sys.getprofile(),
        "sys.gettrace()": sys.gettrace(),
        "threading.getprofile()": threading.getprofile(),
        "threading.gettrace()": threading.gettrace(),
    }


def planted_violation(values: list[Any], made: list[Any] = ()) -> list[str]:  # type: ignore[assignment]
    """`planted_members` of `values` as the violation to report ([] when there are none); `made`: the
    tensors among them the harness made (inputs, outputs it allocated), which must also keep their class."""
    names = sorted(set(planted_members(values)) | set(reclassed(made)))
    if not names:
        return []
    return [
        f"the kernel set {', '.join(names)} on a tensor the harness reads, shadowing torch.Tensor's own: "
        "the harness's read would have run the kernel's code outside the timed call"
    ]


def planted_members(values: list[Any]) -> list[str]:
    """Attributes set on a tensor's own instance that shadow a member of torch.Tensor, removed (so the
    harness's next read runs torch's method), each as 'name'. A method found on the instance wins over the
    class's: red team round 9 planted a `detach` on the output buffer during the timed call, and the
    harness's untimed read of the output (`o.detach()`) ran the call's work. Honest kernels set no
    attributes on the harness's tensors; a tag of their own that shadows nothing is left alone."""
    found = []
    for v in values:
        if type(v) is torch.Tensor:
            own = vars(v)
            for name in [k for k in own if hasattr(torch.Tensor, k)]:
                del own[name]
                found.append(name)
    return found


def reclassed(made: list[Any]) -> list[str]:
    """Tensors the harness made whose class the kernel changed (`x.__class__ = Mine`, Mine overriding
    copy_: its methods then run in the harness's steps), put back to torch.Tensor, each as '__class__'."""
    found = []
    for v in made:
        if isinstance(v, torch.Tensor) and type(v) not in _HARNESS_TENSOR_CLASSES:
            found.append(f"__class__ (to {type(v).__name__})")
            with contextlib.suppress(TypeError):
                v.__class__ = torch.Tensor
    return found


# The classes the harness's own tensors may have, by identity: a class's `__module__` is whatever its body
# says ("torch.nn.parameter" in red team round 11c's Reclassed)
_HARNESS_TENSOR_CLASSES = (torch.Tensor, torch.nn.Parameter, *[getattr(torch.nn, "Buffer", torch.Tensor)])


def _library_setting(name: str, before: str | None, now: str | None) -> bool:
    """A reserved variable that torch itself sets the first time an honest kernel compiles with
    torch.compile (seen on the H200, round 4): inductor points TRITON_PTXAS_PATH at the ptxas torch ships,
    where it was unset. Only that exact string counts, naming a regular file (not a link a candidate could
    retarget: red team, round 4), and only where it was unset; any other change stays a violation. Also a
    math library's setting (library_settings.LIBRARY_ENV: CUBLAS_WORKSPACE_CONFIG, which torch's
    deterministic mode asks for, round 12; the cuBLASLt workspace and preference, round 15) set where it
    was unset, in the form its library documents (policy.library_env_setting)."""
    if library_env_value(name, now):
        return before is None
    if name != "TRITON_PTXAS_PATH" or before is not None or now is None:
        return False
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    shipped = {os.path.join(torch_dir, *parts, "bin", "ptxas") for parts in ((), ("_inductor",))}
    return now in shipped and os.path.isfile(now) and not os.path.islink(now)


def quiet_library_threads() -> None:
    """Called in the worker before the candidate is imported (and before the Sentinel's snapshot): tqdm
    starts a monitor thread with its first progress bar (torch.compile's, in an honest kernel: a "thread
    left running" on the H200, round 4), and that thread runs hooks a candidate can fill (tqdm's own test
    hook, a bar's file): so no monitor is started at all (tqdm's documented switch, monitor_interval = 0),
    and any thread left running stays a violation. Only the installed tqdm is imported here, never one
    beside kernel.py (the kernel directory is not on sys.path yet)."""
    import importlib.util

    if importlib.util.find_spec("tqdm") is None:
        return
    try:
        import tqdm

        tqdm.tqdm.monitor_interval = 0
    except Exception:  # a broken tqdm is the candidate's problem if it uses one, not the harness's
        return


def reserved_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith(RESERVED_PREFIXES)}


def _span(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    start = storage.data_ptr()
    return start, start + max(storage.nbytes(), 1)


OVERWRITTEN = (
    "an earlier call's output can no longer be read: torch reports it overwritten by a later call (a CUDA "
    "graph's static outputs: torch.compile(mode='reduce-overhead') without a clone). Outputs must be fresh "
    "memory each call that later calls leave alone; return a clone of the graph's result"
)


def earlier_spans(earlier: list[torch.Tensor]) -> list[tuple[int, int]]:
    """The memory of earlier calls' outputs. One whose storage torch refuses to hand out (cudagraph trees
    mark the outputs a replay overwrote) means the kernel's outputs do not outlive its next call: an
    INCORRECT result (runner.ReturnError) with the fix named, not the harness's traceback (round 12)."""
    found = []
    for t in earlier:
        try:
            if t.numel():
                found.append(_span(t))
        except RuntimeError as exc:
            raise ReturnError(f"{OVERWRITTEN} ({str(exc).splitlines()[0][:200]})") from None
    return found


def output_violations(
    outputs: list[Any],
    inputs: list[Any],
    earlier: list[torch.Tensor],
    device: torch.device,
    returned: dict[int, int] | None = None,
) -> list[str]:
    """Outputs must be plain dense tensors on the device, not aliasing inputs or earlier outputs.
    `returned` {output: input}: outputs the operator's reference itself returns as (updated) inputs,
    e.g. a KV cache written in place; such an output may share memory with that input only."""
    found = []
    allowed = {int(k): int(v) for k, v in (returned or {}).items()}
    spans = [(i, _span(t)) for i, t in enumerate(inputs) if isinstance(t, torch.Tensor) and t.numel()]
    old_spans = earlier_spans(earlier)
    for i, out in enumerate(outputs):
        if type(out) in (int, float, bool):  # a Python scalar output (`shape: null`): a value, no memory
            continue
        if type(out) is not torch.Tensor:
            found.append(
                f"output {i} is a {type(out).__module__}.{type(out).__name__}, not a plain "
                "torch.Tensor (lazy/fake tensor subclasses are rejected)"
            )
            continue
        if out.is_meta or out.layout != torch.strided or out.device.type != device.type:
            found.append(f"output {i} is not a materialised strided tensor on {device}")
            continue
        if not out.numel():
            continue
        lo, hi = _span(out)
        if any(lo < b and a < hi for j, (a, b) in spans if allowed.get(i) != j):
            found.append(f"output {i} shares memory with an input (returning an input or a view of it)")
        if any(lo < b and a < hi for a, b in old_spans):
            found.append(f"output {i} reuses the memory of an earlier call's output (a cached buffer)")
    return found
