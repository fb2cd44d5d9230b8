// wgmma m64n16k32 s32 += s8*s8 with A and B by descriptor, in a K loop (inline PTX).
#include <cstdint>

__device__ __forceinline__ uint64_t desc_of(uint32_t addr) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(128 >> 4) << 16) | ((uint64_t)(256 >> 4) << 32);
}

__global__ void __launch_bounds__(128)
wgmma_s8_loop(const int8_t* __restrict__ a, const int8_t* __restrict__ b, int* __restrict__ out, int ksteps) {
    __shared__ __align__(1024) int8_t sa[64 * 32];
    __shared__ __align__(1024) int8_t sb[16 * 32];
    int t = threadIdx.x;
    int d[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < ksteps; ++k) {
        for (int i = t; i < 64 * 32; i += 128) sa[i] = a[k * 64 * 32 + i];
        for (int i = t; i < 16 * 32; i += 128) sb[i] = b[k * 16 * 32 + i];
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        uint64_t da = desc_of(static_cast<uint32_t>(__cvta_generic_to_shared(sa)));
        uint64_t db = desc_of(static_cast<uint32_t>(__cvta_generic_to_shared(sb)));
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        asm volatile(
            "wgmma.mma_async.sync.aligned.m64n16k32.s32.s8.s8 "
            "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, 1;\n"
            : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7])
            : "l"(da), "l"(db));
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        __syncthreads();
    }
    for (int i = 0; i < 8; ++i) out[8 * t + i] = d[i];
}
