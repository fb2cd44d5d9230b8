// wgmma m64n8k16 f32 += f16*f16, A in registers, B by descriptor (inline PTX).
#include <cstdint>

__device__ __forceinline__ uint64_t make_desc(const void* smem, uint32_t lbo, uint32_t sbo) {
    uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    uint64_t d = 0;
    d |= (uint64_t)((addr & 0x3FFFF) >> 4);
    d |= (uint64_t)((lbo & 0x3FFFF) >> 4) << 16;
    d |= (uint64_t)((sbo & 0x3FFFF) >> 4) << 32;
    return d;
}

__global__ void __launch_bounds__(128, 1)
wgmma_f16_rega(const uint32_t* __restrict__ a, const uint16_t* __restrict__ b, float* __restrict__ out) {
    __shared__ __align__(1024) uint16_t sb[8 * 16];
    int t = threadIdx.x;
    sb[t] = b[t];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    uint32_t a0 = a[4 * t], a1 = a[4 * t + 1], a2 = a[4 * t + 2], a3 = a[4 * t + 3];
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
    uint64_t desc_b = make_desc(sb, 128, 256);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %8, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, %9, p, 1, 1, 0;\n"
        "}\n"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(1), "l"(desc_b));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    out[4 * t] = d0;
    out[4 * t + 1] = d1;
    out[4 * t + 2] = d2;
    out[4 * t + 3] = d3;
}
