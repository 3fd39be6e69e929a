__global__ void big(float* out) {
    __shared__ float buf[100000];
    buf[threadIdx.x] = out[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = buf[(threadIdx.x + 1) % 100000];
}
