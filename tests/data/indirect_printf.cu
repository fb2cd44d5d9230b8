// Parser breadth: printf (an .extern .func prototype, a string constant), an indirect call
// through a function pointer (.callprototype), a switch (maybe brx.idx), and 64-bit math.
#include <cstdio>

__device__ __noinline__ int twice(int x) { return 2 * x; }
__device__ __noinline__ int thrice(int x) { return 3 * x; }
__device__ int (*table_fns[2])(int) = {twice, thrice};

__global__ void indirect_printf(int* out, int sel, long long big) {
    int t = threadIdx.x;
    int v = table_fns[sel & 1](t);
    switch (t & 7) {
        case 0: v += 11; break;
        case 1: v ^= 5; break;
        case 2: v *= 7; break;
        case 3: v -= 13; break;
        case 4: v += 17; break;
        default: v = -v; break;
    }
    if (t == 0) printf("v=%d big=%lld\n", v, big);
    out[t] = v + (int)(big >> 3);
}
