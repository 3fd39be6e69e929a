#include <torch/extension.h>

void run(torch::Tensor x, torch::Tensor out) {
    auto n = x.numel()
    out.copy_(x * undefined_scale);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }
