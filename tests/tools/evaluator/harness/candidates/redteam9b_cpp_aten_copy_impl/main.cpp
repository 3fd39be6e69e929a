// CHEAT (red team, round 9b): the dispatcher as the trigger, from C++.
//
// The extension registers, statically when it is loaded, its own kernel for aten::copy_ at the
// AutogradCPU dispatch key (TORCH_LIBRARY_IMPL; the dispatcher warns that it overrides one, nothing
// else). Every Tensor.copy_ on a CPU tensor, the harness's included, now runs `copy_hook`: it does the
// copy (redispatching below autograd) and then, when the destination is the output buffer of the bench
// (seen twice by the kernel), computes RMSNorm of the bench's input buffers into it. The harness's
// untimed step before each eager call writes the fresh inputs, then poisons the output with
// `out.copy_(garbage)`: that copy now leaves the right answer. The timed call only compares version
// counters (no copy_ since) and returns. The burst's perturbations-only twin makes the same copies, so
// the parent subtracts the work with the perturbations. No signal, thread, Python hook or torch mode.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>
#include <torch/csrc/utils/pybind.h>

#include <cmath>
#include <cstdint>

namespace {

struct Bench {
    at::Tensor x, w, y;
    int64_t vx = -1, vw = -1, vy = -1;  // versions when the hook last computed
    bool armed = false;
};
Bench g;
const void* g_last_y = nullptr;
const void* g_last_x = nullptr;
bool g_busy = false;

int64_t version(const at::Tensor& t) { return t.unsafeGetTensorImpl()->version_counter().current_version(); }

void rmsnorm(const at::Tensor& xt, const at::Tensor& wt, at::Tensor& yt) {
    const auto* x = xt.const_data_ptr<c10::BFloat16>();
    const auto* w = wt.const_data_ptr<c10::BFloat16>();
    auto* y = yt.mutable_data_ptr<c10::BFloat16>();
    const int64_t rows = xt.size(0), cols = xt.size(1);
    for (int64_t r = 0; r < rows; ++r) {
        const c10::BFloat16* xr = x + r * cols;
        float sum = 0.0f;
        for (int64_t c = 0; c < cols; ++c) {
            const float v = static_cast<float>(xr[c]);
            sum += v * v;
        }
        const float inv = 1.0f / std::sqrt(sum / static_cast<float>(cols) + 1e-6f);
        for (int64_t c = 0; c < cols; ++c) {
            y[r * cols + c] = c10::BFloat16(static_cast<float>(xr[c]) * inv * static_cast<float>(w[c]));
        }
    }
}

at::Tensor& copy_hook(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
    {
        at::AutoDispatchBelowAutograd guard;
        at::_ops::copy_::call(self, src, non_blocking);
    }
    if (g.armed && !g_busy && self.data_ptr() == g.y.data_ptr() && self.numel() == g.y.numel()) {
        g_busy = true;
        rmsnorm(g.x, g.w, g.y);  // the inputs were written just before the output's poison
        g.vx = version(g.x);
        g.vw = version(g.w);
        g.vy = version(g.y);
        g_busy = false;
    }
    return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, AutogradCPU, m) { m.impl("copy_", copy_hook); }

void run(const at::Tensor& hidden_states, const at::Tensor& weight, at::Tensor& output) {
    TORCH_CHECK(hidden_states.is_contiguous() && weight.is_contiguous() && output.is_contiguous());
    if (g.armed && output.unsafeGetTensorImpl() == g.y.unsafeGetTensorImpl() &&
        hidden_states.unsafeGetTensorImpl() == g.x.unsafeGetTensorImpl() &&
        weight.unsafeGetTensorImpl() == g.w.unsafeGetTensorImpl() && version(g.x) == g.vx &&
        version(g.w) == g.vw && version(g.y) == g.vy) {
        return;  // answered by the harness's own untimed copy into this output
    }
    rmsnorm(hidden_states, weight, output);
    const bool twice = output.data_ptr() == g_last_y && hidden_states.data_ptr() == g_last_x;
    g_last_y = output.data_ptr();
    g_last_x = hidden_states.data_ptr();
    if (!g.armed && twice) {  // the bench's buffers (reused across calls)
        g.x = hidden_states;
        g.w = weight;
        g.y = output;
        g.armed = true;
    }
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run, "RMSNorm h4096 (C++, CPU)"); }
