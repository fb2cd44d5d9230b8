// A plain kernel for parser breadth: loops, branches, a non-inlined .func call,
// a __constant__ table with an initialiser, shared memory, vector loads, float constants.
#include <cstdint>

__constant__ int table[8] = {1, 2, 3, 5, 8, 13, 21, 34};
__device__ unsigned counter = 7;

__device__ __noinline__ float scale(float x, int k) {
    if (x < 0.f) return -x * table[k & 7];
    return x * 1.5f + k;
}

__global__ void __launch_bounds__(256, 2)
plain_kernel(const float4* __restrict__ in, float* __restrict__ out, int n) {
    __shared__ float buf[256];
    int t = threadIdx.x;
    float4 v = in[blockIdx.x * blockDim.x + t];
    float acc = v.x + v.y + v.z + v.w;
    for (int i = 0; i < n; ++i) {
        if (i % 3 == 0) acc = scale(acc, i);
        else if (acc > 100.f) break;
        acc -= 0.25f;
    }
    buf[t] = acc;
    __syncthreads();
    if (t == 0) {
        float s = 0.f;
        for (int i = 0; i < 256; ++i) s += buf[i];
        out[blockIdx.x] = s;
        atomicAdd(&counter, 1u);
    }
}
