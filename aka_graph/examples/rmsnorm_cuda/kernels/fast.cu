// Episode 1 of the CUDA demo: RMSNorm (hidden 2048, bf16) in one pass over the row.
// One 256-thread block per row; each thread loads its 8 values (and the matching 8 weights) with a
// single 16-byte load, keeps them in registers, and the fp32 sum of squares is reduced by warp
// shuffles and then across the 8 warps through shared memory. The row is read once, written once.
#include <ATen/cuda/CUDAContext.h>
#include <cuda_bf16.h>
#include <torch/extension.h>

#include <cstdint>

namespace {

constexpr int kHidden = 2048;
constexpr int kThreads = 256;
constexpr int kPerThread = kHidden / kThreads;  // 8 bf16 = one 16-byte vector
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void __launch_bounds__(kThreads) rmsnorm_row_vec(const __nv_bfloat16* __restrict__ x,
                                                            const __nv_bfloat16* __restrict__ w,
                                                            __nv_bfloat16* __restrict__ y, float eps) {
    const size_t offset = static_cast<size_t>(blockIdx.x) * kHidden + threadIdx.x * kPerThread;
    const uint4 packed = *reinterpret_cast<const uint4*>(x + offset);
    const __nv_bfloat16* v = reinterpret_cast<const __nv_bfloat16*>(&packed);
    float f[kPerThread];
    float sq = 0.f;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
        f[i] = __bfloat162float(v[i]);
        sq += f[i] * f[i];
    }
    __shared__ float partial[kWarps];
    __shared__ float inv_rms;
    sq = warp_sum(sq);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = sq;
    __syncthreads();
    if (threadIdx.x < 32) {
        float total = threadIdx.x < kWarps ? partial[threadIdx.x] : 0.f;
        total = warp_sum(total);
        if (threadIdx.x == 0) inv_rms = rsqrtf(total / kHidden + eps);
    }
    __syncthreads();
    const uint4 wpacked = *reinterpret_cast<const uint4*>(w + threadIdx.x * kPerThread);
    const __nv_bfloat16* wv = reinterpret_cast<const __nv_bfloat16*>(&wpacked);
    uint4 out;
    __nv_bfloat16* o = reinterpret_cast<__nv_bfloat16*>(&out);
    const float scale = inv_rms;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) o[i] = __float2bfloat16(f[i] * scale * __bfloat162float(wv[i]));
    *reinterpret_cast<uint4*>(y + offset) = out;
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

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
    TORCH_CHECK(aligned16(xc.data_ptr()) && aligned16(wc.data_ptr()) && aligned16(y.data_ptr()),
                "16-byte aligned tensors expected");
    const int rows = static_cast<int>(xc.size(0));
    if (rows == 0) return;
    rmsnorm_row_vec<<<rows, kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const __nv_bfloat16*>(xc.data_ptr<at::BFloat16>()),
        reinterpret_cast<const __nv_bfloat16*>(wc.data_ptr<at::BFloat16>()),
        reinterpret_cast<__nv_bfloat16*>(y.data_ptr<at::BFloat16>()), 1e-6f);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run, "RMSNorm h2048 bf16, one pass, 16-byte loads (CUDA)"); }
