"""The per-framework table and the framework-purity check the policy review applies: honest kernels of
each framework pass; a candidate whose main work is a torch op, or that has no kernel of its framework,
is rejected with the reason and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from aka_graph.frameworks import FRAMEWORKS, framework, framework_purity, purity_problems
from tests.conftest import REPO_ROOT

TRITON_OK = """
import triton
import triton.language as tl
import torch

@triton.jit
def _k(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)

def run(x, y):
    _k[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), B=1024)
"""

TRITON_TORCH = TRITON_OK.replace(
    "    _k[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), B=1024)",
    "    y.copy_(torch.nn.functional.softmax(x, dim=-1))",
)

CUTE_TORCH = """
import torch
import cutlass.cute as cute

@cute.jit
def unused(a):
    pass

def run(A, B, C):
    C.copy_(A @ B)
"""

CUTE_OK = """
import cutlass.cute as cute

@cute.kernel
def _kernel(gA, gB):
    pass

@cute.jit
def launch(a, b):
    _kernel(a, b).launch(grid=(1, 1, 1), block=(128, 1, 1))

def run(A, B):
    launch(A, B)
"""

CUDA_OK = """
#include <torch/extension.h>
__global__ void k(const float* x, float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = x[i]; }
void run(torch::Tensor x, torch::Tensor y) { k<<<1, 128>>>(x.data_ptr<float>(), y.data_ptr<float>(), 128); }
"""

CUDA_ATEN = """
#include <torch/extension.h>
void run(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
    c.copy_(torch::matmul(a, b));
}
"""


def test_every_campaign_framework_is_described_once() -> None:
    assert set(FRAMEWORKS) == {"triton", "gluon", "cute_dsl", "cuda"}
    assert framework("cuda").entry_point == "kernel.cu::run"
    assert framework("cuda").solution_spec()["languages"] == ["cuda_cpp"]
    assert framework("gluon").sol_language == "triton"  # SOL-ExecBench has no gluon language
    with pytest.raises(ValueError, match="choose one of triton, gluon, cute_dsl, cuda"):
        framework("opencl")
    for fw in FRAMEWORKS.values():
        skill = REPO_ROOT / "skills" / fw.skill / "SKILL.md"
        assert skill.is_file(), f"{fw.name}: {skill} missing"


@pytest.mark.parametrize(
    ("name", "sources"),
    [
        ("triton", {"kernel.py": TRITON_OK}),
        ("cute_dsl", {"kernel.py": CUTE_OK}),
        ("cuda", {"kernel.cu": CUDA_OK, "solution.json": "{}"}),
        ("gluon", {"kernel.py": "from triton.experimental import gluon\n@gluon.jit\ndef k(x):\n    pass\n"}),
    ],
)
def test_honest_kernels_pass(name: str, sources: dict[str, str]) -> None:
    assert purity_problems(name, sources) == []


def test_torch_doing_the_work_is_rejected_with_its_line() -> None:
    problems = purity_problems("triton", {"kernel.py": TRITON_TORCH})
    assert problems[0].startswith("not a Triton kernel")
    assert any(p.startswith("kernel.py:12: torch.nn.functional.softmax(...)") for p in problems)
    cute = purity_problems("cute_dsl", {"kernel.py": CUTE_TORCH})
    assert any("kernel.py:10: a matrix product with the @ operator" in p for p in cute)
    cuda = purity_problems("cuda", {"kernel.cu": CUDA_ATEN})
    assert "no __global__ kernel (nor a CUTLASS/cuBLAS/cuDNN call) in the C++/CUDA sources" in cuda
    assert any(p.startswith("kernel.cu:4: ATen op torch::matmul") for p in cuda)


def test_a_triton_kernel_is_not_gluon() -> None:
    problems = purity_problems("gluon", {"kernel.py": TRITON_OK})
    assert "the kernels are @triton.jit, not @gluon.jit: convert them to Gluon" in problems


def test_glue_torch_calls_are_allowed() -> None:
    glue = TRITON_OK.replace(
        "def run(x, y):\n", "def run(x, y):\n    x = x.contiguous().view(-1)\n    t = torch.empty_like(x)\n"
    )
    assert purity_problems("triton", {"kernel.py": glue}) == []


def test_purity_reads_a_kernel_directory(tmp_path: Path) -> None:
    (tmp_path / "kernel.cu").write_text(CUDA_ATEN)
    assert framework_purity("cuda", tmp_path)
    (tmp_path / "kernel.cu").write_text(CUDA_OK)
    assert framework_purity("cuda", tmp_path) == []
    assert framework_purity("pytorch", tmp_path) == []  # no rule for plain PyTorch
