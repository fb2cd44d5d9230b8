"""Real nvcc-made PTX for the model's agreement figure (``tests/support/agreement.py``, distribution iii).

Each CUDA source below is compiled by nvcc (13.0 here: ``nvcc --version``) with ``-arch=sm_90a -ptx
-O3`` into ``tests/data/nvcc/NAME.ptx``: the register allocation, loops, address arithmetic and
predication are nvcc's, the tensor-core instructions come from the CUDA wmma API or from inline PTX
as CUTLASS writes it (``wgmma.fence``/``mma_async``/``commit_group``/``wait_group``).
``PYTHONPATH=$PWD:tests python3 -m support.nvcc_corpus`` rewrites the files (needs nvcc).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "data" / "nvcc"

_WGMMA_HELPERS = r"""
__device__ __forceinline__ unsigned long long desc(const void* smem, int lead, int stride) {
  unsigned addr = (unsigned)__cvta_generic_to_shared(smem);
  unsigned long long d = 0;
  d |= (unsigned long long)((addr & 0x3FFFF) >> 4);
  d |= (unsigned long long)((lead & 0x3FFFF) >> 4) << 16;
  d |= (unsigned long long)((stride & 0x3FFFF) >> 4) << 32;
  return d;
}
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }
"""

_ACC8 = ", ".join(f"%{i}" for i in range(8))
_ACC32 = ", ".join(f"%{i}" for i in range(32))

SOURCES = {
    "wmma_f16_gemm": r"""
#include <mma.h>
using namespace nvcuda;
__global__ void wmma_f16_gemm(const half* a, const half* b, float* c, int k_tiles) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  for (int k = 0; k < k_tiles; ++k) {
    wmma::load_matrix_sync(fa, a + 16 * k, 16 * k_tiles);
    wmma::load_matrix_sync(fb, b + 16 * k, 16 * k_tiles);
    wmma::mma_sync(fc, fa, fb, fc);
  }
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
""",
    "wmma_bf16_tf32": r"""
#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;
__global__ void wmma_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::load_matrix_sync(fc, c, 16, wmma::mem_row_major);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
__global__ void wmma_tf32(const float* a, const float* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 8);
  wmma::load_matrix_sync(fb, b, 8);
  for (int i = 0; i < fa.num_elements; i++) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
""",
    "mma_sync_ldmatrix_loop": r"""
__global__ void mma_sync_ldmatrix_loop(const unsigned* a, const unsigned* b, float* c, int steps) {
  __shared__ __align__(128) unsigned short sa[16 * 16];
  int t = threadIdx.x;
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  for (int s = 0; s < steps; ++s) {
    for (int i = t; i < 128; i += 32) ((unsigned*)sa)[i] = a[s * 128 + i];
    __syncwarp();
    unsigned r0, r1, r2, r3;
    unsigned addr = (unsigned)__cvta_generic_to_shared(sa + (t % 16) * 16 + (t / 16) * 8);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
    unsigned b0 = b[s * 64 + t], b1 = b[s * 64 + 32 + t];
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(r0), "r"(r1), "r"(r2), "r"(r3), "r"(b0), "r"(b1));
    __syncwarp();
  }
  for (int i = 0; i < 4; ++i) c[t * 4 + i] = d[i];
}
""",
    "wgmma_m64n16_kloop": _WGMMA_HELPERS + r"""
__global__ void wgmma_m64n16_kloop(const half* a, const half* b, float* c, int k_tiles) {
  __shared__ __align__(128) half sa[64 * 16];
  __shared__ __align__(128) half sb[16 * 16];
  int t = threadIdx.x;
  float d[8];
  for (int i = 0; i < 8; ++i) d[i] = 0.f;
  for (int k = 0; k < k_tiles; ++k) {
    for (int i = t; i < 64 * 16; i += 128) sa[i] = a[k * 64 * 16 + i];
    for (int i = t; i < 16 * 16; i += 128) sb[i] = b[k * 16 * 16 + i];
    __syncthreads();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    fence();
    asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {""" + _ACC8 + r"""}, %8, %9, 1, 1, 1, 0, 0;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "l"(desc(sa, 128, 256)), "l"(desc(sb, 128, 256)));
    commit();
    wait<0>();
    __syncthreads();
  }
  for (int i = 0; i < 8; ++i) c[t * 8 + i] = d[i];
}
""",
    "wgmma_m64n64_pipelined": _WGMMA_HELPERS + r"""
__global__ void wgmma_m64n64_pipelined(const half* a, const half* b, float* c, int k_tiles) {
  __shared__ __align__(128) half sa[2][64 * 16];
  __shared__ __align__(128) half sb[2][64 * 16];
  int t = threadIdx.x;
  float d[32];
  for (int i = 0; i < 32; ++i) d[i] = 0.f;
  for (int i = t; i < 64 * 16; i += 128) { sa[0][i] = a[i]; sb[0][i] = b[i]; }
  __syncthreads();
  for (int k = 0; k < k_tiles; ++k) {
    int s = k & 1;
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    fence();
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {""" + _ACC32 + r"""}, %32, %33, 1, 1, 1, 0, 1;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(desc(sa[s], 128, 256)), "l"(desc(sb[s], 128, 256)));
    commit();
    if (k + 1 < k_tiles)
      for (int i = t; i < 64 * 16; i += 128) { sa[s ^ 1][i] = a[(k + 1) * 1024 + i]; sb[s ^ 1][i] = b[(k + 1) * 1024 + i]; }
    wait<0>();
    __syncthreads();
  }
  for (int i = 0; i < 32; ++i) c[t * 32 + i] = d[i];
}
""",
    "wgmma_register_a": _WGMMA_HELPERS + r"""
__global__ void wgmma_register_a(const unsigned* a, const half* b, float* c, float scale) {
  __shared__ __align__(128) half sb[16 * 16];
  int t = threadIdx.x;
  for (int i = t; i < 256; i += 128) sb[i] = b[i];
  __syncthreads();
  unsigned a0 = a[t * 4], a1 = a[t * 4 + 1], a2 = a[t * 4 + 2], a3 = a[t * 4 + 3];
  float d[8];
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  fence();
  asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {""" + _ACC8 + r"""}, {%8, %9, %10, %11}, %12, 0, 1, 1, 1;\n"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc(sb, 128, 256)));
  commit();
  wait<0>();
  for (int i = 0; i < 8; ++i) c[t * 8 + i] = d[i] * scale;
}
__global__ void wgmma_two_groups(const half* a, float* c) {
  __shared__ __align__(128) half sa[64 * 16];
  int t = threadIdx.x;
  for (int i = t; i < 1024; i += 128) sa[i] = a[i];
  __syncthreads();
  float d[8], e[8];
  for (int i = 0; i < 8; ++i) { d[i] = 0.f; e[i] = 1.f; }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  fence();
  asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {""" + _ACC8 + r"""}, %8, %9, 1, 1, 1, 0, 0;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
               : "l"(desc(sa, 128, 256)), "l"(desc(sa, 128, 256)));
  commit();
  asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {""" + _ACC8 + r"""}, %8, %9, 1, 1, 1, 0, 0;\n"
               : "+f"(e[0]), "+f"(e[1]), "+f"(e[2]), "+f"(e[3]), "+f"(e[4]), "+f"(e[5]), "+f"(e[6]), "+f"(e[7])
               : "l"(desc(sa, 128, 256)), "l"(desc(sa + 512, 128, 256)));
  commit();
  wait<1>();
  for (int i = 0; i < 8; ++i) c[t * 8 + i] = d[i];
  wait<0>();
  for (int i = 0; i < 8; ++i) c[1024 + t * 8 + i] = e[i];
}
""",
}


def build(out: Path = OUT, nvcc: str | None = None) -> list[Path]:
    """Compile every source to ``out/NAME.ptx``; returns the files written."""
    nvcc = nvcc or shutil.which("nvcc")
    if nvcc is None:
        raise SystemExit("nvcc not found (CUDA 13.0's nvcc makes these files)")
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, src in SOURCES.items():
            cu = Path(tmp) / f"{name}.cu"
            cu.write_text("#include <cuda_fp16.h>\n" + src)
            dest = out / f"{name}.ptx"
            proc = subprocess.run([nvcc, "-arch=sm_90a", "-O3", "-ptx", str(cu), "-o", str(dest)],
                                  capture_output=True, text=True)
            if proc.returncode:
                raise SystemExit(f"{name}: nvcc failed:\n{proc.stderr}")
            dest.write_text(f"// made by tests/support/nvcc_corpus.py with nvcc ({version}) -arch=sm_90a -O3 -ptx\n"
                            + dest.read_text())
            written.append(dest)
    return written


if __name__ == "__main__":  # pragma: no cover
    for p in build(nvcc=sys.argv[1] if len(sys.argv) > 1 else None):
        print(p)
