"""What the campaign knows per kernel framework, in one place: display name, SOL-ExecBench `languages`
value, the files a candidate consists of, the V1 baseline instructions, the prompt fragment, the skill,
and the purity rule the policy review applies (`purity_problems`).

A "CuTe DSL" or "CUDA" candidate whose main work is a torch op is not a CuTe DSL or CUDA kernel: the
purity check finds the framework's kernels in the candidate's sources (AST for Python, text for C++)
and names every torch compute op doing the work, with file and line, so the rejection says what to fix.
"""

from __future__ import annotations

import ast
import re
import threading
from dataclasses import dataclass
from pathlib import Path

# `run` without --framework (and the fleet) run campaigns in threads; two ast.parse calls at once raised
# "SystemError: AST constructor recursion depth mismatch" under CPython 3.11.7
_AST_LOCK = threading.Lock()


@dataclass(frozen=True)
class Framework:
    name: str  # the campaign's --framework value
    display: str
    sol_language: str  # SOL-ExecBench spec.languages value
    files: tuple[str, ...]  # what the agent edits (the entry file first)
    entry_point: str
    skill: str  # skills/<skill>/SKILL.md
    v1_instructions: str
    prompt_fragment: str
    purity_rule: str

    def solution_spec(self, destination_passing: bool = True) -> dict[str, object]:
        """The `spec` of the candidate's solution.json."""
        spec: dict[str, object] = {
            "languages": [self.sol_language],
            "entry_point": self.entry_point,
            "destination_passing_style": destination_passing,
        }
        if self.sol_language == "cuda_cpp":
            spec |= {"binding": "torch", "compile_options": {"cuda_cflags": ["-O3", "--use_fast_math"]}}
        return spec


FRAMEWORKS: dict[str, Framework] = {
    f.name: f
    for f in (
        Framework(
            name="triton",
            display="Triton",
            sol_language="triton",
            files=("kernel.py",),
            entry_point="kernel.py::run",
            skill="triton-on-cpu",
            v1_instructions="Write the operator as one or more @triton.jit kernels in kernel.py; run() only "
            "allocates, reshapes and launches them.",
            prompt_fragment="Triton (@triton.jit kernels, triton.language as tl)",
            purity_rule="the work is done in @triton.jit kernels, not by torch ops",
        ),
        Framework(
            name="gluon",
            display="Gluon",
            sol_language="triton",
            files=("kernel.py",),
            entry_point="kernel.py::run",
            skill="gluon",
            v1_instructions="Write the operator as @gluon.jit kernels (from triton.experimental import "
            "gluon; from triton.experimental.gluon import language as gl) with explicit layouts; run() "
            "launches them.",
            prompt_fragment="Gluon (triton.experimental.gluon: @gluon.jit kernels with explicit layouts)",
            purity_rule="the work is done in @gluon.jit kernels (a plain @triton.jit kernel is not Gluon)",
        ),
        Framework(
            name="cute_dsl",
            display="CuTe DSL",
            sol_language="cute_dsl",
            files=("kernel.py",),
            entry_point="kernel.py::run",
            skill="cute_dsl",
            v1_instructions="Write the operator with the CUTLASS Python DSL (import cutlass, cutlass.cute as "
            "cute): a @cute.kernel launched from a @cute.jit function compiled once with cute.compile and "
            "cached at module level; run() converts tensors with from_dlpack and calls it.",
            prompt_fragment="CuTe DSL (cutlass.cute: @cute.kernel / @cute.jit, compiled once and cached)",
            purity_rule="the work is done in @cute.kernel / @cute.jit code, not by torch ops",
        ),
        Framework(
            name="cuda",
            display="CUDA C++",
            sol_language="cuda_cpp",
            files=("kernel.cu", "solution.json"),
            entry_point="kernel.cu::run",
            skill="cuda",
            v1_instructions="Write the operator in kernel.cu as __global__ CUDA kernels launched on "
            "c10::cuda::getCurrentCUDAStream() from `void run(...)` (at::Tensor arguments, outputs "
            "written in place), bound with PYBIND11_MODULE(TORCH_EXTENSION_NAME, m); solution.json names "
            "kernel.cu::run, languages [cuda_cpp] and its compile_options. Include only "
            "<ATen/core/Tensor.h>, <c10/cuda/CUDAStream.h> and <torch/csrc/utils/pybind.h>, not "
            "<torch/extension.h> or <ATen/cuda/CUDAContext.h>: every evaluation builds afresh, and nvcc "
            "takes about 5x longer on those headers.",
            prompt_fragment="CUDA C++ (kernel.cu: __global__ kernels, a torch-extension run())",
            purity_rule="the work is done in __global__ kernels (or CUTLASS/cuBLAS/cuDNN), not ATen ops",
        ),
    )
}


REFERENCE_FILE = "kernel.py"  # V0: the verbatim PyTorch reference (and the file of unknown frameworks)
SOLUTION_FILE = "solution.json"


def candidate_files(framework_name: str) -> tuple[str, ...]:
    """The files one candidate of `framework_name` consists of, entry file first: what is frozen,
    diffed for the policy review, promoted and submitted. `solution.json` (optional for Python
    frameworks) always travels with it; PyTorch and unknown names: kernel.py."""
    return tuple(dict.fromkeys((*declared_files(framework_name), SOLUTION_FILE)))


def entry_file(framework_name: str) -> str:
    """The file without which there is no candidate (the agent is asked again when it is missing)."""
    return candidate_files(framework_name)[0]


def declared_files(framework_name: str) -> tuple[str, ...]:
    """The files the framework says the agent writes (`Framework.files`; PyTorch: kernel.py)."""
    fw = FRAMEWORKS.get(framework_name)
    return fw.files if fw else (REFERENCE_FILE,)


def editable_files(framework_name: str) -> list[str]:
    """What an agent of a `framework_name` campaign may edit: the framework's files, and the V0
    reference kernel.py, which a non-Python candidate (CUDA) replaces or deletes."""
    return list(dict.fromkeys((*declared_files(framework_name), REFERENCE_FILE)))


def files_line(framework_name: str) -> str:
    """The candidate's files as the prompts name them ("kernel.cu and solution.json")."""
    return " and ".join(declared_files(framework_name))


def framework(name: str) -> Framework:
    try:
        return FRAMEWORKS[name]
    except KeyError:
        raise ValueError(f"unknown framework {name!r}: choose one of {', '.join(FRAMEWORKS)}") from None


# torch calls that do an operator's work (allocation, views, dtype casts and launches are glue, allowed)
TORCH_COMPUTE_OPS = frozenset(
    {
        *("matmul", "mm", "bmm", "addmm", "baddbmm", "einsum", "linear", "conv1d", "conv2d", "conv3d"),
        *("softmax", "log_softmax", "layer_norm", "rms_norm", "group_norm", "batch_norm", "normalize"),
        *("scaled_dot_product_attention", "sum", "mean", "var", "std", "norm", "prod", "cumsum", "max"),
        *("min", "amax", "amin", "argmax", "argmin", "topk", "sort", "exp", "log", "sqrt", "rsqrt", "pow"),
        *("tanh", "sigmoid", "silu", "gelu", "relu", "mul", "add", "sub", "div", "where", "gather"),
        *("scatter", "scatter_add", "index_select", "embedding", "cross_entropy", "dropout", "lerp"),
    }
)
_TORCH_ROOTS = frozenset({"torch", "F", "functional", "nn", "aten"})
_KERNEL_DECORATORS = {
    "triton": {"triton.jit", "jit", "triton.autotune", "autotune", "triton.heuristics"},
    "gluon": {"gluon.jit"},
    "cute_dsl": {"cute.kernel", "cute.jit", "cutlass.cute.kernel", "cutlass.cute.jit"},
}
_CPP_ATEN_OP = re.compile(r"\b(?:torch|at)::(" + "|".join(sorted(TORCH_COMPUTE_OPS)) + r")\s*\(")
_CPP_METHOD_OP = re.compile(r"\.(matmul|mm|bmm|addmm|softmax|log_softmax|einsum|sum|mean|exp|pow|rsqrt)\s*\(")
_CPP_KERNEL = re.compile(r"__global__|cutlass::|cute::|cublas\w*\(|cudnn\w*\(|cudnn_frontend::")


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _decorators(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for dec in node.decorator_list:
                found.add(_dotted(dec.func if isinstance(dec, ast.Call) else dec))
    return found


def _python_torch_ops(tree: ast.AST, rel: str) -> list[str]:
    """torch compute ops called outside the framework's kernels (file:line: what)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            found.append(f"{rel}:{node.lineno}: a matrix product with the @ operator (torch)")
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = node.func.attr
        root = _dotted(node.func).split(".")[0]
        if name in TORCH_COMPUTE_OPS and root in _TORCH_ROOTS:
            found.append(f"{rel}:{node.lineno}: {_dotted(node.func)}(...)")
    return found


def purity_problems(framework_name: str, sources: dict[str, str]) -> list[str]:
    """Why the candidate's main work is not in `framework_name` (empty: it is). `sources`: path -> text
    of the candidate's files. PyTorch-only frameworks have no rule."""
    if framework_name not in FRAMEWORKS:
        return []
    fw = FRAMEWORKS[framework_name]
    problems: list[str] = []
    if fw.sol_language == "cuda_cpp":
        cpp = {p: t for p, t in sources.items() if p.endswith((".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp"))}
        if not any(_CPP_KERNEL.search(t) for t in cpp.values()):
            problems.append("no __global__ kernel (nor a CUTLASS/cuBLAS/cuDNN call) in the C++/CUDA sources")
        for path, text in sorted(cpp.items()):
            for n, line in enumerate(text.splitlines(), 1):
                for m in (*_CPP_ATEN_OP.finditer(line), *_CPP_METHOD_OP.finditer(line)):
                    problems.append(
                        f"{path}:{n}: ATen op {m.group(0).rstrip('(').strip()}(...) does the work"
                    )
        if any(p.endswith(".py") for p in sources):
            problems.append(
                "a CUDA candidate is C++/CUDA sources only; Python files: "
                + ", ".join(sorted(p for p in sources if p.endswith(".py")))
            )
    else:
        wanted = _KERNEL_DECORATORS.get(fw.name, set())
        decorators: set[str] = set()
        torch_ops: list[str] = []
        for path, text in sorted(sources.items()):
            if not path.endswith(".py"):
                continue
            try:
                with _AST_LOCK:  # CPython 3.11's parser is not safe in concurrent threads
                    tree = ast.parse(text, path)
            except SyntaxError:
                continue  # the compile gate reports it
            decorators |= _decorators(tree)
            torch_ops += _python_torch_ops(tree, path)
        if fw.name == "gluon" and not decorators & wanted and decorators & _KERNEL_DECORATORS["triton"]:
            problems.append("the kernels are @triton.jit, not @gluon.jit: convert them to Gluon")
        elif not decorators & wanted:
            problems.append(
                f"no {fw.display} kernel found (expected a function decorated with "
                f"{' or '.join('@' + d for d in sorted(wanted))})"
            )
        problems += [f"{where} does the work in torch" for where in torch_ops]
    if problems:
        problems.insert(0, f"not a {fw.display} kernel ({fw.purity_rule}):")
    return problems


def purity_reason(problems: list[str]) -> str:
    """`purity_problems` as one line for a record: the verdict, then every finding."""
    return (problems[0] + " " + "; ".join(problems[1:])).strip() if problems else ""


def candidate_sources(kernel_dir: Path) -> dict[str, str]:
    """The candidate's source files by relative path (what `purity_problems` reads)."""
    kernel_dir = Path(kernel_dir)
    if kernel_dir.is_file():
        return {kernel_dir.name: kernel_dir.read_text(errors="replace")}
    suffixes = (".py", ".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp")
    return {
        p.relative_to(kernel_dir).as_posix(): p.read_text(errors="replace")
        for p in sorted(kernel_dir.rglob("*"))
        if p.is_file() and p.suffix in suffixes and "__pycache__" not in p.parts
    }


def framework_purity(framework_name: str, kernel_dir: Path) -> list[str]:
    """`purity_problems` on a kernel directory (or a kernel.py file): the policy review's one call."""
    return purity_problems(framework_name, candidate_sources(kernel_dir))
