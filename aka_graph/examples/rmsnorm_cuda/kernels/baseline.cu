// V1 of the CUDA demo: RMSNorm (hidden 2048, bf16) as a first, straightforward CUDA kernel.
// One warp per row, scalar bf16 loads; a first pass sums the squares (fp32, warp shuffles), a second
// pass re-reads the row and writes x * inv_rms * w. Correct, memory-bound, but with 2-byte loads and
// two passes over the row it leaves bandwidth on the table.
#include <ATen/cuda/CUDAContext.h>
#include <cuda_bf16.h>
#include <torch/extension.h>

namespace {

constexpr int kHidden = 2048;
constexpr int kWarpsPerBlock = 4;

__global__ void rmsnorm_warp_per_row(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                                     __nv_bfloat16* __restrict__ y, int rows, float eps) {
    const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const __nv_bfloat16* xr = x + static_cast<size_t>(row) * kHidden;
    __nv_bfloat16* yr = y + static_cast<size_t>(row) * kHidden;
    float sq = 0.f;
    for (int i = lane; i < kHidden; i += 32) {
        const float v = __bfloat162float(xr[i]);
        sq += v * v;
    }
    for (int offset = 16; offset > 0; offset >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, offset);
    const float inv_rms = rsqrtf(sq / kHidden + eps);
    for (int i = lane; i < kHidden; i += 32) {
        yr[i] = __float2bfloat16(__bfloat162float(xr[i]) * inv_rms * __bfloat162float(w[i]));
    }
}

}  // namespace

void run(const torch::Tensor& x, const torch::Tensor& weight, torch::Tensor& y) {
    TORCH_CHECK(x.is_cuda() && weight.is_cuda() && y.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == at::kBFloat16 && weight.scalar_type() == at::kBFloat16 &&
                    y.scalar_type() == at::kBFloat16,
                "bf16 tensors expected");
    TORCH_CHECK(x.dim() == 2 && x.size(1) == kHidden && weight.numel() == kHidden, "x must be [rows, 2048]");
    TORCH_CHECK(y.is_contiguous() && y.sizes() == x.sizes(), "y must be a contiguous [rows, 2048] tensor");
    const torch::Tensor xc = x.contiguous();
    const torch::Tensor wc = weight.contiguous();
    const int rows = static_cast<int>(xc.size(0));
    if (rows == 0) return;
    const dim3 grid((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
    rmsnorm_warp_per_row<<<grid, kWarpsPerBlock * 32, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const __nv_bfloat16*>(xc.data_ptr<at::BFloat16>()),
        reinterpret_cast<const __nv_bfloat16*>(wc.data_ptr<at::BFloat16>()),
        reinterpret_cast<__nv_bfloat16*>(y.data_ptr<at::BFloat16>()), rows, 1e-6f);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run, "RMSNorm h2048 bf16, warp per row (CUDA)"); }
