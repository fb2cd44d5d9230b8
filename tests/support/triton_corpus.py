"""Real compiler-generated sm_90a kernels: Triton's compile-only path, no GPU needed.

``python -m support.triton_corpus OUT_DIR`` (from ``tests/``, with ``pip install triton``) writes one
``.ptx`` per kernel variant below and a ``MANIFEST.json`` naming each file's kernel, source shape,
dtypes, launch options and the Triton version.  The kernels are the shapes production Hopper code
has -- a pointer-load matmul, a tensor-descriptor (TMA) matmul, a persistent TMA matmul over tiles, a
warp-specialized mainloop, attention forward (the P @ V product feeds wgmma from registers) and
attention backward -- across element types, tile sizes, stage counts and warp counts.  The PTX is
written at ``.version 8.4`` (Triton's ``ptx_version`` option), which every ptxas from 12.4 reads, or
at 8.7 (ptxas 12.8 and later) where the kernel needs it (TMA into ``.shared::cta`` is PTX 8.6), so
one corpus serves the release matrix; line info is off, so the files hold code, not DWARF; the committed files under ``tests/data/triton/`` were
made by this script and are inputs to the parser, checker, ptxas-model and SASS-verifier tests.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

PTX_VERSIONS = (84, 87)  # the lowest that holds the kernel: 8.4 (ptxas 12.4+), else 8.7 (12.8+)
TARGET = GPUTarget("cuda", 90, 32)


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    in_group = GROUP * num_n
    first_m = (pid // in_group) * GROUP
    size_m = min(num_m - first_m, GROUP)
    pm = first_m + ((pid % in_group) % size_m)
    pn = (pid % in_group) // size_m
    rm = (pm * BM + tl.arange(0, BM)) % M
    rn = (pn * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32 if c_ptr.dtype.element_ty != tl.int32 else tl.int32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(a, mask=rk[None, :] < K - k * BK, other=0.0)
        y = tl.load(b, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(x, y, acc)
        a += BK * sak
        b += BK * sbk
    cm = pm * BM + tl.arange(0, BM)
    cn = pn * BN + tl.arange(0, BN)
    c = c_ptr + cm[:, None] * scm + cn[None, :] * scn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def matmul_tma(a_desc, b_desc, c_desc, M, N, K,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BN)
    om = (pid // num_n) * BM
    on = (pid % num_n) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = a_desc.load([om, k * BK])
        y = b_desc.load([on, k * BK])
        acc = tl.dot(x, y.T, acc)
    c_desc.store([om, on], acc.to(c_desc.dtype))


@triton.jit
def matmul_tma_persistent(a_desc, b_desc, c_desc, M, N, K,
                          BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                          NUM_SMS: tl.constexpr, WS: tl.constexpr):
    start = tl.program_id(0)
    num_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * num_n
    k_tiles = tl.cdiv(K, BK)
    for tile in tl.range(start, tiles, NUM_SMS, flatten=not WS, warp_specialize=WS):
        om = (tile // num_n) * BM
        on = (tile % num_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(k_tiles):
            x = a_desc.load([om, k * BK])
            y = b_desc.load([on, k * BK])
            acc = tl.dot(x, y.T, acc)
        c_desc.store([om, on], acc.to(c_desc.dtype))


@triton.jit
def matmul_ws(a_desc, b_desc, c_ptr, M, N, K, scm,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BN)
    om = (pid // num_n) * BM
    on = (pid % num_n) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), warp_specialize=True):
        x = a_desc.load([om, k * BK])
        y = b_desc.load([on, k * BK])
        acc = tl.dot(x, y.T, acc)
    cm = om + tl.arange(0, BM)
    cn = on + tl.arange(0, BN)
    tl.store(c_ptr + cm[:, None] * scm + cn[None, :], acc.to(c_ptr.dtype.element_ty))


@triton.jit
def matmul_devdesc(a_ptr, b_ptr, c_ptr, M, N, K,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PERSISTENT: tl.constexpr, WS: tl.constexpr):
    """Tensor descriptors made on the device: each CTA zeroes a 128-byte tensor-map scratch area in
    shared memory, fills it with ``tensormap.replace`` and copies it out with
    ``tensormap.cp_fenceproxy`` (the tensor-map proxy's own fence) before the TMA loads use it."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    num_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * num_n if PERSISTENT else tl.program_id(0) + 1
    for tile in tl.range(tl.program_id(0), tiles, 132, flatten=not WS, warp_specialize=WS):
        om = (tile // num_n) * BM
        on = (tile % num_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(tl.cdiv(K, BK)):
            x = a_desc.load([om, k * BK])
            y = b_desc.load([on, k * BK])
            acc = tl.dot(x, y.T, acc)
        c_desc.store([om, on], acc.to(c_desc.dtype))


@triton.jit
def attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, sm_scale, N_CTX, stride_t, stride_h,
             HEAD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    base = off_h * stride_h
    rm = start_m * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, HEAD)
    q = tl.load(q_ptr + base + rm[:, None] * stride_t + rd[None, :])
    m_i = tl.zeros([BM], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BM], dtype=tl.float32) + 1.0
    acc = tl.zeros([BM, HEAD], dtype=tl.float32)
    hi = (start_m + 1) * BM if CAUSAL else N_CTX
    for start_n in range(0, hi, BN):
        cols = start_n + rn
        k = tl.load(k_ptr + base + cols[None, :] * stride_t + rd[:, None])
        qk = tl.dot(q, k) * sm_scale
        if CAUSAL:
            qk = tl.where(rm[:, None] >= cols[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptr + base + cols[:, None] * stride_t + rd[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(lse_ptr + off_h * N_CTX + rm, m_i + tl.math.log2(l_i))
    tl.store(o_ptr + base + rm[:, None] * stride_t + rd[None, :], acc.to(o_ptr.dtype.element_ty))


@triton.jit
def attn_fwd_tma(q_desc, k_desc, v_desc, o_desc, sm_scale, N_CTX,
                 HEAD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    row = off_h * N_CTX + start_m * BM
    q = q_desc.load([row, 0])
    m_i = tl.zeros([BM], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BM], dtype=tl.float32) + 1.0
    acc = tl.zeros([BM, HEAD], dtype=tl.float32)
    for start_n in tl.range(0, N_CTX, BN):
        k = k_desc.load([off_h * N_CTX + start_n, 0])
        qk = tl.dot(q, k.T) * sm_scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = v_desc.load([off_h * N_CTX + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    o_desc.store([row, 0], (acc / l_i[:, None]).to(o_desc.dtype))


@triton.jit
def attn_bwd_dkdv(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, sm_scale, N_CTX,
                  stride_t, stride_h, HEAD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    start_n = tl.program_id(0)
    off_h = tl.program_id(1)
    base = off_h * stride_h
    rn = start_n * BN + tl.arange(0, BN)
    rd = tl.arange(0, HEAD)
    k = tl.load(k_ptr + base + rn[:, None] * stride_t + rd[None, :])
    v = tl.load(v_ptr + base + rn[:, None] * stride_t + rd[None, :])
    dk = tl.zeros([BN, HEAD], dtype=tl.float32)
    dv = tl.zeros([BN, HEAD], dtype=tl.float32)
    for start_m in range(0, N_CTX, BM):
        rm = start_m + tl.arange(0, BM)
        qT = tl.load(q_ptr + base + rm[None, :] * stride_t + rd[:, None])
        lse = tl.load(lse_ptr + off_h * N_CTX + rm)
        qkT = tl.dot(k, qT)
        pT = tl.math.exp2(qkT - lse[None, :])
        do = tl.load(do_ptr + base + rm[:, None] * stride_t + rd[None, :])
        dv += tl.dot(pT.to(do.dtype), do)
        delta = tl.load(delta_ptr + off_h * N_CTX + rm)
        dpT = tl.dot(v, tl.trans(do)).to(tl.float32)
        dsT = pT * (dpT - delta[None, :])
        dk += tl.dot(dsT.to(qT.dtype), tl.trans(qT))
    tl.store(dv_ptr + base + rn[:, None] * stride_t + rd[None, :], dv.to(dv_ptr.dtype.element_ty))
    tl.store(dk_ptr + base + rn[:, None] * stride_t + rd[None, :], (dk * sm_scale).to(dk_ptr.dtype.element_ty))


@triton.jit
def attn_bwd_dq(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, N_CTX, stride_t, stride_h,
                HEAD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    base = off_h * stride_h
    rm = start_m * BM + tl.arange(0, BM)
    rd = tl.arange(0, HEAD)
    q = tl.load(q_ptr + base + rm[:, None] * stride_t + rd[None, :])
    do = tl.load(do_ptr + base + rm[:, None] * stride_t + rd[None, :])
    lse = tl.load(lse_ptr + off_h * N_CTX + rm)
    delta = tl.load(delta_ptr + off_h * N_CTX + rm)
    dq = tl.zeros([BM, HEAD], dtype=tl.float32)
    for start_n in range(0, N_CTX, BN):
        rn = start_n + tl.arange(0, BN)
        kT = tl.load(k_ptr + base + rn[None, :] * stride_t + rd[:, None])
        vT = tl.load(v_ptr + base + rn[None, :] * stride_t + rd[:, None])
        p = tl.math.exp2(tl.dot(q, kT) - lse[:, None])
        dp = tl.dot(do, vT).to(tl.float32)
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(kT.dtype), tl.trans(kT))
    tl.store(dq_ptr + base + rm[:, None] * stride_t + rd[None, :], dq.to(dq_ptr.dtype.element_ty))


def _ints(names: str) -> dict[str, str]:
    return {n: "i32" for n in names.split()}


def _desc(dtype: str, shape: tuple[int, int]) -> str:
    return f"tensordesc<{dtype}[{shape[0]}, {shape[1]}]>"


def variants() -> list[dict[str, Any]]:
    """Every kernel variant of the corpus: name, function, signature, constexprs, options."""
    out: list[dict[str, Any]] = []
    acc_of = {"fp16": "fp16", "bf16": "bf16", "fp8e4nv": "fp16", "fp32": "fp32", "i8": "i32"}
    for dt, (bm, bn, bk), warps, stages in [
        ("fp16", (128, 128, 64), 4, 3), ("fp16", (64, 64, 32), 4, 2), ("fp16", (128, 256, 64), 8, 3),
        ("fp16", (64, 128, 64), 4, 4), ("bf16", (128, 128, 64), 4, 3), ("bf16", (128, 64, 32), 4, 4),
        ("fp8e4nv", (128, 128, 128), 8, 3), ("fp8e4nv", (64, 64, 64), 4, 4), ("fp32", (128, 128, 32), 8, 3),
        ("fp32", (64, 64, 16), 4, 3), ("i8", (128, 128, 64), 4, 3), ("i8", (64, 128, 128), 4, 2),
    ]:
        b_dt = dt
        out.append(dict(name=f"matmul_{dt}_{bm}x{bn}x{bk}_w{warps}s{stages}", fn=matmul,
                        sig={"a_ptr": f"*{dt}", "b_ptr": f"*{b_dt}", "c_ptr": f"*{acc_of[dt]}",
                             **_ints("M N K sam sak sbk sbn scm scn")},
                        const={"BM": bm, "BN": bn, "BK": bk, "GROUP": 8},
                        opts={"num_warps": warps, "num_stages": stages}))
    for dt, (bm, bn, bk), warps, stages in [
        ("fp16", (128, 128, 64), 4, 3), ("fp16", (128, 256, 64), 8, 3), ("bf16", (64, 128, 64), 4, 4),
        ("fp8e4nv", (128, 128, 128), 8, 3),
    ]:
        cdt = "fp16" if dt == "fp8e4nv" else dt
        sig = {"a_desc": _desc(dt, (bm, bk)), "b_desc": _desc(dt, (bn, bk)), "c_desc": _desc(cdt, (bm, bn)),
               **_ints("M N K")}
        out.append(dict(name=f"matmul_tma_{dt}_{bm}x{bn}x{bk}_w{warps}s{stages}", fn=matmul_tma, sig=sig,
                        const={"BM": bm, "BN": bn, "BK": bk}, opts={"num_warps": warps, "num_stages": stages}))
        for ws in (False, True):
            out.append(dict(name=f"matmul_tma_persistent{'_ws' if ws else ''}_{dt}_{bm}x{bn}x{bk}_w{warps}s{stages}",
                            fn=matmul_tma_persistent, sig=sig,
                            const={"BM": bm, "BN": bn, "BK": bk, "NUM_SMS": 132, "WS": ws},
                            opts={"num_warps": warps, "num_stages": stages}))
    for dt, (bm, bn, bk), warps, stages in [("fp16", (128, 128, 64), 4, 3), ("fp16", (128, 128, 64), 8, 3),
                                            ("bf16", (128, 256, 64), 8, 4), ("fp16", (64, 128, 64), 4, 2)]:
        out.append(dict(name=f"matmul_ws_{dt}_{bm}x{bn}x{bk}_w{warps}s{stages}", fn=matmul_ws,
                        sig={"a_desc": _desc(dt, (bm, bk)), "b_desc": _desc(dt, (bn, bk)), "c_ptr": f"*{dt}",
                             **_ints("M N K scm")},
                        const={"BM": bm, "BN": bn, "BK": bk}, opts={"num_warps": warps, "num_stages": stages}))
    out += _pipeline_slice()
    for dt, head, bm, bn, causal, warps, stages in [
        ("fp16", 64, 128, 64, False, 4, 3), ("fp16", 64, 128, 64, True, 4, 3), ("fp16", 128, 128, 64, False, 8, 3),
        ("bf16", 128, 64, 64, True, 4, 2), ("bf16", 64, 64, 32, False, 4, 4),
    ]:
        out.append(dict(name=f"attn_fwd_{dt}_d{head}_{bm}x{bn}{'_causal' if causal else ''}_w{warps}s{stages}",
                        fn=attn_fwd, sig={"q_ptr": f"*{dt}", "k_ptr": f"*{dt}", "v_ptr": f"*{dt}", "o_ptr": f"*{dt}",
                                          "lse_ptr": "*fp32", "sm_scale": "fp32", **_ints("N_CTX stride_t stride_h")},
                        const={"HEAD": head, "BM": bm, "BN": bn, "CAUSAL": causal},
                        opts={"num_warps": warps, "num_stages": stages}))
    for dt, head, bm, bn, warps, stages in [("fp16", 64, 128, 64, 4, 3), ("bf16", 128, 128, 128, 8, 2)]:
        sig = {"q_desc": _desc(dt, (bm, head)), "k_desc": _desc(dt, (bn, head)), "v_desc": _desc(dt, (bn, head)),
               "o_desc": _desc(dt, (bm, head)), "sm_scale": "fp32", "N_CTX": "i32"}
        out.append(dict(name=f"attn_fwd_tma_{dt}_d{head}_{bm}x{bn}_w{warps}s{stages}", fn=attn_fwd_tma, sig=sig,
                        const={"HEAD": head, "BM": bm, "BN": bn}, opts={"num_warps": warps, "num_stages": stages}))
    for dt, head, bm, bn, warps, stages in [("fp16", 64, 64, 64, 4, 2), ("fp16", 128, 64, 128, 8, 2),
                                            ("bf16", 64, 32, 64, 4, 3)]:
        ptrs = {"q_ptr": f"*{dt}", "k_ptr": f"*{dt}", "v_ptr": f"*{dt}", "do_ptr": f"*{dt}", "lse_ptr": "*fp32",
                "delta_ptr": "*fp32"}
        out.append(dict(name=f"attn_bwd_dkdv_{dt}_d{head}_{bm}x{bn}_w{warps}s{stages}", fn=attn_bwd_dkdv,
                        sig={**ptrs, "dk_ptr": f"*{dt}", "dv_ptr": f"*{dt}", "sm_scale": "fp32",
                             **_ints("N_CTX stride_t stride_h")},
                        const={"HEAD": head, "BM": bm, "BN": bn}, opts={"num_warps": warps, "num_stages": stages}))
        out.append(dict(name=f"attn_bwd_dq_{dt}_d{head}_{bn}x{bm}_w{warps}s{stages}", fn=attn_bwd_dq,
                        sig={**ptrs, "dq_ptr": f"*{dt}", **_ints("N_CTX stride_t stride_h")},
                        const={"HEAD": head, "BM": bn, "BN": bm}, opts={"num_warps": warps, "num_stages": stages}))
    return out


# Issue 40's slice: warp-specialised, persistent and TMA mainloops over more tile shapes, warp
# counts and stage counts -- three stages give ``stage = i mod 3`` by a magic multiply, four warps a
# warpgroup-indexed dispatch table in shared memory -- and device-made tensor descriptors.
SLICE_TILES = (("fp16", (64, 128, 64), 4, 3), ("fp16", (64, 64, 64), 4, 3), ("fp16", (128, 128, 64), 8, 4),
               ("bf16", (128, 128, 64), 8, 3), ("fp16", (128, 256, 64), 4, 3), ("fp16", (64, 256, 64), 4, 3))


def _pipeline_slice() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for dt, (bm, bn, bk), warps, stages in SLICE_TILES:
        opts = {"num_warps": warps, "num_stages": stages}
        sig = {"a_desc": _desc(dt, (bm, bk)), "b_desc": _desc(dt, (bn, bk)), "c_desc": _desc(dt, (bm, bn)),
               **_ints("M N K")}
        tag = f"{dt}_{bm}x{bn}x{bk}_w{warps}s{stages}"
        out.append(dict(name=f"matmul_tma_{tag}", fn=matmul_tma, sig=sig, const={"BM": bm, "BN": bn, "BK": bk},
                        opts=opts, slice="issue40"))
        for ws in (False, True):
            out.append(dict(name=f"matmul_tma_persistent{'_ws' if ws else ''}_{tag}", fn=matmul_tma_persistent,
                            sig=sig, const={"BM": bm, "BN": bn, "BK": bk, "NUM_SMS": 132, "WS": ws}, opts=opts,
                            slice="issue40"))
        out.append(dict(name=f"matmul_ws_{tag}", fn=matmul_ws,
                        sig={"a_desc": sig["a_desc"], "b_desc": sig["b_desc"], "c_ptr": f"*{dt}", **_ints("M N K scm")},
                        const={"BM": bm, "BN": bn, "BK": bk}, opts=opts, slice="issue40"))
    for (bm, bn, bk), warps, stages in (((64, 128, 64), 4, 3), ((128, 128, 64), 4, 3), ((128, 128, 64), 8, 3)):
        for persistent, ws in ((False, False), (True, False), (True, True)):
            kind = "persistent_ws" if ws else "persistent" if persistent else "tile"
            out.append(dict(name=f"matmul_devdesc_{kind}_fp16_{bm}x{bn}x{bk}_w{warps}s{stages}", fn=matmul_devdesc,
                            sig={"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", **_ints("M N K")},
                            const={"BM": bm, "BN": bn, "BK": bk, "PERSISTENT": persistent, "WS": ws},
                            opts={"num_warps": warps, "num_stages": stages}, slice="issue40"))
    return out


METADATA_DROP = ("target", "extern_libs", "ir_override")  # machine paths and objects, not the kernel's launch


def metadata(k) -> dict[str, Any]:
    """Triton's own metadata of a compiled kernel, as its cache writes it beside the PTX
    (``NAME.json``): ``num_warps``, ``shared``, ``tensordesc_meta`` (each tensor descriptor's block,
    element type and swizzle), ...; what ``fuzzptx.launch`` reads for a launch."""
    md = k.metadata._asdict()
    return {key: v for key, v in md.items() if key not in METADATA_DROP}


def build(out_dir: Path, only: str | None = None, metadata_only: bool = False) -> dict[str, Any]:
    """Compile every variant (or those whose name contains ``only``) and write the PTX, Triton's
    metadata beside it (``NAME.json``) and the manifest; ``metadata_only``: the JSON files alone
    (the PTX and manifest as they are)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    os.environ["TRITON_DISABLE_LINE_INFO"] = "1"
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    manifest: dict[str, Any] = {"triton": triton.__version__, "target": "sm_90a",
                                "made_by": "tests/support/triton_corpus.py", "kernels": [], "failed": []}
    for v in variants():
        if only and only not in v["name"]:
            continue
        k, error = None, ""
        for version in PTX_VERSIONS:
            try:
                k = triton.compile(ASTSource(v["fn"], v["sig"], constexprs=v["const"]), target=TARGET,
                                   options={**v["opts"], "ptx_version": version})
                break
            except Exception as exc:  # noqa: BLE001 - a variant this Triton cannot build is listed, not fatal
                error = f"{type(exc).__name__}: {str(exc)[:300]}"
        if k is None:
            manifest["failed"].append({"name": v["name"], "error": error,
                                       **({"slice": v["slice"]} if "slice" in v else {})})
            print(f"{v['name']}: FAILED {error[:80]}", file=sys.stderr)
            continue
        ptx = k.asm["ptx"]
        (out_dir / f"{v['name']}.json").write_text(json.dumps(metadata(k), indent=1, sort_keys=True) + "\n")
        if metadata_only:
            print(f"{v['name']}.json")
            continue
        (out_dir / f"{v['name']}.ptx").write_text(ptx)
        manifest["kernels"].append({"file": f"{v['name']}.ptx", "source": v["fn"].__name__,
                                    **({"slice": v["slice"]} if "slice" in v else {}),
                                    "signature": v["sig"], "constexprs": v["const"], "options": v["opts"],
                                    "ptx_version": version, "wgmma": ptx.count("wgmma.mma_async"), "lines": ptx.count("\n")})
        print(f"{v['name']}: {ptx.count(chr(10))} lines, {ptx.count('wgmma.mma_async')} wgmma")
    if not metadata_only:
        (out_dir / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m support.triton_corpus", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="directory for the .ptx files and MANIFEST.json")
    ap.add_argument("--only", help="build only the variants whose name contains this")
    ap.add_argument("--metadata-only", action="store_true", help="write only Triton's metadata NAME.json files")
    a = ap.parse_args(argv)
    m = build(a.out, a.only, a.metadata_only)
    if a.metadata_only:
        return 0
    print(f"{len(m['kernels'])} kernels, {len(m['failed'])} failed -> {a.out}")
    return 0 if m["kernels"] else 1


if __name__ == "__main__":
    sys.exit(main())
