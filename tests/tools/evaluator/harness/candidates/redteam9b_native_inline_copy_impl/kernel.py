"""CHEAT (red team, round 9b): redteam9b_cpp_aten_copy_impl for a native (Atrex-Bench) operator, through
load_inline.

The inline C++ registers its own AutogradCPU kernel for aten::copy_ (TORCH_LIBRARY_IMPL, static, at
load). The harness writes each eager call's fresh inputs into the bench's buffer with `buf.copy_(fresh)`
in its untimed step; the hook does the copy and then computes SwiGLU of the buffer into a new tensor.
forward() hands that tensor back when the buffer's version counter says nothing wrote it since. A burst's
perturbations-only twin makes the same copies, so its cost is subtracted with the perturbations.
"""

from __future__ import annotations

import torch
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
#include <torch/library.h>

namespace {
at::Tensor g_in, g_ready;
int64_t g_ver = -1, g_n = 0;
bool g_armed = false, g_busy = false;
const void* g_last = nullptr;

int64_t version(const at::Tensor& t) { return t.unsafeGetTensorImpl()->version_counter().current_version(); }

at::Tensor swiglu(const at::Tensor& p, int64_t n) {
    at::AutoDispatchBelowAutograd guard;
    auto gate = p.narrow(-1, 0, n).to(at::kFloat);
    auto up = p.narrow(-1, n, n).to(at::kFloat);
    return (at::silu(gate) * up).to(p.scalar_type());
}

at::Tensor& copy_hook(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
    {
        at::AutoDispatchBelowAutograd guard;
        at::_ops::copy_::call(self, src, non_blocking);
    }
    if (g_armed && !g_busy && self.data_ptr() == g_in.data_ptr() && self.numel() == g_in.numel()) {
        g_busy = true;
        g_ready = swiglu(g_in, g_n);
        g_ver = version(g_in);
        g_busy = false;
    }
    return self;
}
}  // namespace

TORCH_LIBRARY_IMPL(aten, AutogradCPU, m) { m.impl("copy_", copy_hook); }

at::Tensor run(const at::Tensor& p, int64_t n) {
    if (g_armed && p.unsafeGetTensorImpl() == g_in.unsafeGetTensorImpl() && version(p) == g_ver
        && g_ready.defined()) {
        at::Tensor r = g_ready;
        g_ready = at::Tensor();
        return r;
    }
    at::Tensor r = swiglu(p, n);
    if (!g_armed && p.data_ptr() == g_last) {
        g_in = p;
        g_n = n;
        g_armed = true;
    }
    g_last = p.data_ptr();
    return r;
}
"""

_EXT = load_inline("rt9b_swiglu_copy_impl", cpp_sources=[_SRC], functions=["run"], extra_cflags=["-O2"])


class Model(torch.nn.Module):
    def __init__(self, intermediate: int) -> None:
        super().__init__()
        self.intermediate = intermediate

    def forward(self, projected: torch.Tensor) -> torch.Tensor:
        return _EXT.run(projected, self.intermediate)
