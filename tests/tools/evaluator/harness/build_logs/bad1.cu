#include <cuda_runtime.h>
#include <cub/cub.cuh>

__global__ void scale(float* out, const float* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * factor;
}

__global__ void reduce(const float* in, float* out) {
    typedef cub::BlockReduce<float, 128> R;
    __shared__ typename R::TempStorage tmp;
    float v = in[threadIdx.x];
    float s = R(tmp).Sum(v, v, v, v);
    if (threadIdx.x == 0) *out = s;
}
