// A tiny kernel compiled with -G, so its PTX carries .file/.loc and .section debug blocks.
__global__ void tiny_debug(int* out, int n) {
    int t = threadIdx.x;
    if (t < n) out[t] = t * 3;
}
