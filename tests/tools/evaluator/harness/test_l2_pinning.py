"""Data pinned in the GPU's L2 across the harness's flush (l2_pinning.py): refused in Python and C/C++,
with the finding naming the technique first; the device's harmless limits and prose stay allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from aka_graph.tools.evaluator.harness.l2_pinning import TECHNIQUE
from aka_graph.tools.evaluator.harness.policy import native_source_problems, scan_kernel_dir

# the shape of round 15's corpus solutions (written here, not copied): ctypes, libcudart, a window
CTYPES_WINDOW = '''import ctypes
import torch

class Window(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int), ("missProp", ctypes.c_int)]

def pin(weight, stream):
    w = Window()
    w.base_ptr = weight.data_ptr()
    w.num_bytes = weight.numel() * weight.element_size()
    w.hitRatio = 1.0
    w.hitProp = 2
    w.missProp = 1
    ctypes.CDLL("libcudart.so").cudaStreamSetAttribute(stream, 1, ctypes.byref(w))

def run(x, weight):
    pin(weight, torch.cuda.current_stream().cuda_stream)
    return x @ weight
'''
CUDA_PYTHON = '''from cuda.bindings import runtime as rt

def run(x, weight):
    rt.cudaDeviceSetLimit(rt.cudaLimit.cudaLimitPersistingL2CacheSize, 32 << 20)
    return x @ weight
'''


def _load_inline(cpp: str) -> str:
    head = "from torch.utils.cpp_extension import load_inline\n"
    return head + f'm = load_inline("m", cpp_sources="""{cpp}""")\n'


CPP_WINDOW = (
    "#include <cuda_runtime.h>\\n"
    "void pin(void* p, size_t n, cudaStream_t s) {\\n"
    "  cudaStreamAttrValue v; v.accessPolicyWindow.base_ptr = p; v.accessPolicyWindow.num_bytes = n;\\n"
    "  v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;\\n"
    "  cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v);\\n}\\n"
)


@pytest.mark.parametrize(
    "source",
    [CTYPES_WINDOW, CUDA_PYTHON, _load_inline(CPP_WINDOW)],
    ids=["ctypes and libcudart", "cuda-python", "C++ through load_inline"],
)
def test_pinning_data_in_the_l2_is_refused_and_named_first(tmp_path: Path, source: str) -> None:
    (tmp_path / "kernel.py").write_text(source)
    found = scan_kernel_dir(tmp_path)
    assert found and TECHNIQUE in found[0]


@pytest.mark.parametrize(
    "code",
    [
        "void f(size_t n) { cudaDeviceSetLimit((cudaLimit)6, n); }",
        "void f(size_t n) { cudaDeviceSetLimit(static_cast<cudaLimit>(0x06), n); }",
        "void f(size_t n) { cuCtxSetLimit(CUlimit(6), n); }",
        "void f(size_t n) { cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, n); }",
    ],
)
def test_a_device_limit_set_by_number_or_the_set_aside_is_refused(code: str) -> None:
    assert native_source_problems(code, always=True)


@pytest.mark.parametrize(
    "code",
    [
        "void f() { cudaDeviceSetLimit(cudaLimitStackSize, 4096); }",
        "void f(size_t n) { cudaDeviceSetLimit( cudaLimitMallocHeapSize , n); }",
        "void f() { cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 1 << 20); }",
        "// no accessPolicyWindow here: the weights stream through the L2 once\nvoid f() {}",
        '#include <torch/extension.h>\nvoid f() { TORCH_CHECK(true, "no cudaLimitPersistingL2CacheSize"); }',
    ],
    ids=["stack size", "malloc heap", "printf fifo", "a comment", "a string"],
)
def test_harmless_limits_and_prose_are_allowed(code: str) -> None:
    assert native_source_problems(code, always=True) == []


def test_a_python_docstring_about_l2_persistence_is_allowed(tmp_path: Path) -> None:
    (tmp_path / "kernel.py").write_text(
        '"""Why no accessPolicyWindow: cudaLimitPersistingL2CacheSize changes the device for everyone."""\n'
        "def run(x):\n    return x * 2\n"
    )
    assert scan_kernel_dir(tmp_path) == []
