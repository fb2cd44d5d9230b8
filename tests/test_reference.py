"""Reference interpreter: every instruction group, divergence, calls, errors, compare().

Programs are hand-built (PTX text through the parser, or IR directly); expected
values come from numpy / Python integers / ml_dtypes, computed independently here.
"""
from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from fuzzptx.data import buffer_bytes
from fuzzptx.oracles.reference import BadAddress, MissingInput, Unsupported, compare, run_program
from fuzzptx.oracles.reference.values import SET, UNDEF
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx import ir
from fuzzptx.ptx.parse import parse

DECLS = """
.reg .b16 %h<8>; .reg .b32 %r<40>; .reg .b64 %rd<20>; .reg .f32 %f<20>; .reg .f64 %fd<8>; .reg .pred %p<8>;
"""


def make(body: str, buffers: list[Buffer], *, block=(128, 1, 1), scalars=(), extra: str = "", params_extra=()) -> Program:
    names = [b.name for b in buffers] + [n for n, _ in scalars]
    ptypes = [".u64"] * len(buffers) + [".u32"] * len(scalars)
    params = ", ".join(f".param {t} {n}" for t, n in zip(ptypes, names))
    loads = "".join(f"ld.param.u64 %rd{10 + i}, [{b.name}];\n" for i, b in enumerate(buffers))
    text = f""".version 8.0
.target sm_90a
.address_size 64
{extra}
.visible .entry k({params})
{{
{DECLS}
{loads}
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd0, %r0, 4;
{body}
ret;
}}
"""
    module = parse(text, "test.ptx")
    return Program(module, Launch("k", (1, 1, 1), block), tuple(buffers), tuple(scalars))


def out_of(r, name, dtype=np.uint32):
    return np.frombuffer(r.bytes(name), dtype)


def inputs(buf: Buffer, dtype) -> np.ndarray:
    return buffer_bytes(buf).view(dtype)


# ------------------------------------------------------------------ special registers


def test_special_registers_2d_block():
    body = """
    mov.u32 %r1, %tid.y; mov.u32 %r2, %ntid.x; mov.u32 %r3, %laneid; mov.u32 %r4, %ctaid.x; mov.u32 %r5, %nctaid.x;
    mov.u32 %r6, %ntid.y; mov.u32 %r7, %tid.z;
    mad.lo.u32 %r8, %r1, %r2, %r0;
    mul.wide.u32 %rd1, %r8, 28; add.s64 %rd1, %rd10, %rd1;
    st.global.u32 [%rd1], %r0; st.global.u32 [%rd1+4], %r1; st.global.u32 [%rd1+8], %r2;
    st.global.u32 [%rd1+12], %r3; st.global.u32 [%rd1+16], %r4; st.global.u32 [%rd1+20], %r5;
    st.global.u32 [%rd1+24], %r6;
    """
    p = make(body, [Buffer("o", "u32", 192 * 7, "zeros", output=True)], block=(96, 2, 1))
    o = out_of(run_program(p), "o").reshape(192, 7)
    lin = np.arange(192)
    assert np.array_equal(o[:, 0], lin % 96) and np.array_equal(o[:, 1], lin // 96)
    assert (o[:, 2] == 96).all() and np.array_equal(o[:, 3], lin % 32)
    assert (o[:, 4] == 0).all() and (o[:, 5] == 1).all() and (o[:, 6] == 2).all()


def test_warpid_is_undefined():
    p = make("mov.u32 %r1, %warpid; add.s64 %rd1, %rd10, %rd0; st.global.u32 [%rd1], %r1;",
             [Buffer("o", "u32", 128, "zeros", output=True)])
    r = run_program(p)
    assert (r.outputs["o"].kind == UNDEF).all()


# ------------------------------------------------------------------ integer arithmetic

def _sh(b: int) -> int:
    return (b % 2**32) % 40  # the kernel's rem.u32 of b by 40: shift amounts past the width included


INT_OPS = [
    ("add.s32 %r3, %r1, %r2;", lambda a, b: a + b),
    ("sub.s32 %r3, %r1, %r2;", lambda a, b: a - b),
    ("mul.lo.s32 %r3, %r1, %r2;", lambda a, b: a * b),
    ("mul.hi.s32 %r3, %r1, %r2;", lambda a, b: (a * b) >> 32),
    ("mul.hi.u32 %r3, %r1, %r2;", lambda a, b: ((a % 2**32) * (b % 2**32)) >> 32),
    ("mad.lo.s32 %r3, %r1, %r2, %r1;", lambda a, b: a * b + a),
    ("mad.hi.u32 %r3, %r1, %r2, 7;", lambda a, b: (((a % 2**32) * (b % 2**32)) >> 32) + 7),
    ("div.s32 %r3, %r1, %r2;", lambda a, b: int(a / b) if b else None),
    ("rem.s32 %r3, %r1, %r2;", lambda a, b: a - int(a / b) * b if b else None),
    ("div.u32 %r3, %r1, %r2;", lambda a, b: (a % 2**32) // (b % 2**32) if b else None),
    ("rem.u32 %r3, %r1, %r2;", lambda a, b: (a % 2**32) % (b % 2**32) if b else None),
    ("min.s32 %r3, %r1, %r2;", min),
    ("max.u32 %r3, %r1, %r2;", lambda a, b: max(a % 2**32, b % 2**32)),
    ("neg.s32 %r3, %r1;", lambda a, b: -a),
    ("abs.s32 %r3, %r1;", lambda a, b: abs(a)),
    ("add.sat.s32 %r3, %r1, %r2;", lambda a, b: max(min(a + b, 2**31 - 1), -2**31)),
    ("and.b32 %r3, %r1, %r2;", lambda a, b: a & b),
    ("or.b32 %r3, %r1, %r2;", lambda a, b: a | b),
    ("xor.b32 %r3, %r1, %r2;", lambda a, b: a ^ b),
    ("not.b32 %r3, %r1;", lambda a, b: ~a),
    ("shl.b32 %r3, %r1, %r4;", lambda a, b: (a << _sh(b)) if _sh(b) < 32 else 0),
    ("shr.u32 %r3, %r1, %r4;", lambda a, b: (a % 2**32) >> _sh(b) if _sh(b) < 32 else 0),
    ("shr.s32 %r3, %r1, %r4;", lambda a, b: a >> min(_sh(b), 31)),
    ("popc.b32 %r3, %r1;", lambda a, b: bin(a % 2**32).count("1")),
    ("clz.b32 %r3, %r1;", lambda a, b: 32 - (a % 2**32).bit_length()),
]


@pytest.mark.parametrize("op,fn", INT_OPS, ids=[o.split()[0] for o, _ in INT_OPS])
def test_integer_ops(op, fn):
    a, b = Buffer("a", "s32", 128, "random", 3), Buffer("b", "s32", 128, "special", 4)
    body = f"""
    add.s64 %rd1, %rd10, %rd0; ld.global.s32 %r1, [%rd1];
    add.s64 %rd2, %rd11, %rd0; ld.global.s32 %r2, [%rd2];
    rem.u32 %r4, %r2, 40;
    {op}
    add.s64 %rd3, %rd12, %rd0; st.global.u32 [%rd3], %r3;
    """
    p = make(body, [a, b, Buffer("o", "u32", 128, "zeros", output=True)])
    r = run_program(p)
    av, bv = inputs(a, np.int32).astype(int), inputs(b, np.int32).astype(int)
    got = out_of(r, "o")
    for i in range(128):
        want = fn(int(av[i]), int(bv[i]))
        if want is None:
            assert r.outputs["o"].kind[i] == UNDEF  # division by zero: unspecified
        else:
            assert int(got[i]) == want % 2**32, (op, av[i], bv[i])


def test_64bit_mul_hi_wide_and_mad_wide():
    a, b = Buffer("a", "s64", 128, "random", 5), Buffer("b", "s64", 128, "random", 6)
    body = """
    mul.wide.u32 %rd0, %r0, 8;
    add.s64 %rd1, %rd10, %rd0; ld.global.s64 %rd4, [%rd1];
    add.s64 %rd2, %rd11, %rd0; ld.global.s64 %rd5, [%rd2];
    mul.hi.u64 %rd6, %rd4, %rd5; mul.hi.s64 %rd7, %rd4, %rd5;
    cvt.u32.u64 %r1, %rd4; cvt.u32.u64 %r2, %rd5;
    mul.wide.s32 %rd8, %r1, %r2; mad.wide.u32 %rd9, %r1, %r2, %rd4;
    mul.wide.u32 %rd3, %r0, 32; add.s64 %rd3, %rd12, %rd3;
    st.global.v2.u64 [%rd3], {%rd6, %rd7}; st.global.v2.u64 [%rd3+16], {%rd8, %rd9};
    """
    p = make(body, [a, b, Buffer("o", "u64", 512, "zeros", output=True)])
    o = out_of(run_program(p), "o", np.uint64).reshape(128, 4)
    av, bv = inputs(a, np.int64), inputs(b, np.int64)
    for i in range(128):
        x, y = int(av[i]), int(bv[i])
        xu, yu = x % 2**64, y % 2**64
        x32, y32 = xu % 2**32, yu % 2**32
        s32 = lambda v: v - 2**32 if v >= 2**31 else v  # noqa: E731
        assert int(o[i, 0]) == (xu * yu) >> 64
        assert int(o[i, 1]) == ((x * y) >> 64) % 2**64
        assert int(o[i, 2]) == (s32(x32) * s32(y32)) % 2**64
        assert int(o[i, 3]) == (x32 * y32 + xu) % 2**64


# ------------------------------------------------------------------ compare and select


@pytest.mark.parametrize("cmp", ["eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"])
def test_setp_integer_with_combine_and_two_dests(cmp):
    a, b = Buffer("a", "s32", 128, "small_int", 7), Buffer("b", "s32", 128, "small_int", 8)
    t = "u32" if cmp in ("lo", "ls", "hi", "hs") else "s32"
    body = f"""
    add.s64 %rd1, %rd10, %rd0; ld.global.s32 %r1, [%rd1];
    add.s64 %rd2, %rd11, %rd0; ld.global.s32 %r2, [%rd2];
    setp.ne.u32 %p3, %r1, 0;
    setp.{cmp}.{t} %p1|%p2, %r1, %r2;
    setp.{cmp}.and.{t} %p4|%p5, %r1, %r2, %p3;
    setp.{cmp}.or.{t} %p6, %r1, %r2, !%p3;
    selp.u32 %r5, 1, 0, %p1; selp.u32 %r6, 2, 0, %p2; selp.u32 %r7, 4, 0, %p4; selp.u32 %r8, 8, 0, %p5;
    selp.u32 %r9, 16, 0, %p6;
    or.b32 %r5, %r5, %r6; or.b32 %r5, %r5, %r7; or.b32 %r5, %r5, %r8; or.b32 %r5, %r5, %r9;
    add.s64 %rd3, %rd12, %rd0; st.global.u32 [%rd3], %r5;
    """
    p = make(body, [a, b, Buffer("o", "u32", 128, "zeros", output=True)])
    got = out_of(run_program(p), "o")
    import operator
    ops = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
           "ge": operator.ge, "lo": operator.lt, "ls": operator.le, "hi": operator.gt, "hs": operator.ge}
    av, bv = inputs(a, np.int32).astype(int), inputs(b, np.int32).astype(int)
    for i in range(128):
        x, y = int(av[i]), int(bv[i])
        if t == "u32":
            x, y = x % 2**32, y % 2**32
        c, q = ops[cmp](x, y), av[i] != 0
        want = c | (not c) << 1 | (c and q) << 2 | ((not c) and q) << 3 | (c or not q) << 4
        assert got[i] == want


def test_setp_float_nan_ordered_unordered():
    a = Buffer("a", "f32", 128, "special", 9)
    body = """
    add.s64 %rd1, %rd10, %rd0; ld.global.f32 %f1, [%rd1];
    setp.lt.f32 %p1, %f1, 0f3F800000; setp.ltu.f32 %p2, %f1, 0f3F800000; setp.nan.f32 %p3, %f1, %f1;
    selp.u32 %r5, 1, 0, %p1; selp.u32 %r6, 2, 0, %p2; selp.u32 %r7, 4, 0, %p3;
    or.b32 %r5, %r5, %r6; or.b32 %r5, %r5, %r7;
    add.s64 %rd3, %rd11, %rd0; st.global.u32 [%rd3], %r5;
    """
    p = make(body, [a, Buffer("o", "u32", 128, "zeros", output=True)])
    got = out_of(run_program(p), "o")
    x = inputs(a, np.float32)
    nan = np.isnan(x)
    with np.errstate(invalid="ignore"):
        want = (x < 1) * 1 + ((x < 1) | nan) * 2 + nan * 4
    assert np.array_equal(got, want)


# ------------------------------------------------------------------ floats


def _f32_program(op: str, a: Buffer, b: Buffer, c: Buffer | None = None) -> Program:
    body = f"""
    add.s64 %rd1, %rd10, %rd0; ld.global.f32 %f1, [%rd1];
    add.s64 %rd2, %rd11, %rd0; ld.global.f32 %f2, [%rd2];
    {"add.s64 %rd4, %rd13, %rd0; ld.global.f32 %f4, [%rd4];" if c else ""}
    {op}
    add.s64 %rd3, %rd12, %rd0; st.global.f32 [%rd3], %f3;
    """
    bufs = [a, b, Buffer("o", "f32", 128, "zeros", output=True)] + ([c] if c else [])
    return make(body, bufs)


@pytest.mark.parametrize("op,fn", [
    ("add.rn.f32 %f3, %f1, %f2;", np.add), ("sub.f32 %f3, %f1, %f2;", np.subtract),
    ("mul.rn.f32 %f3, %f1, %f2;", np.multiply), ("div.rn.f32 %f3, %f1, %f2;", np.divide),
    ("min.f32 %f3, %f1, %f2;", np.fmin), ("max.f32 %f3, %f1, %f2;", np.fmax),
    ("neg.f32 %f3, %f1;", lambda a, b: -a), ("abs.f32 %f3, %f1;", lambda a, b: np.abs(a)),
])
def test_f32_ops_match_ieee_single(op, fn):
    a, b = Buffer("a", "f32", 128, "random", 11), Buffer("b", "f32", 128, "special", 12)
    got = out_of(run_program(_f32_program(op, a, b)), "o", np.float32)
    with np.errstate(all="ignore"):
        want = fn(inputs(a, np.float32), inputs(b, np.float32)).astype(np.float32)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all()


def _exact(x) -> Fraction:
    return Fraction(float(x))


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_fma_and_directed_add_round_exactly(mode):
    """fma/add with each rounding mode: checked against exact rationals rounded by hand."""
    a, b, c = (Buffer(n, "f32", 128, "random", s) for n, s in (("a", 21), ("b", 22), ("c", 23)))
    p = _f32_program(f"fma.{mode}.f32 %f3, %f1, %f2, %f4;", a, b, c)
    got = out_of(run_program(p), "o", np.float32)
    p2 = _f32_program(f"add.{mode}.f32 %f3, %f1, %f2;", a, b)
    got2 = out_of(run_program(p2), "o", np.float32)
    av, bv, cv = inputs(a, np.float32), inputs(b, np.float32), inputs(c, np.float32)

    def rnd(q: Fraction) -> np.float32:
        f = np.float32(float(q))  # nearest (float(q) is correctly rounded to double, then to single: innocuous)
        lo = f if _exact(f) <= q else np.nextafter(f, np.float32(-np.inf))
        hi = f if _exact(f) >= q else np.nextafter(f, np.float32(np.inf))
        if mode == "rm":
            return lo
        if mode == "rp":
            return hi
        if mode == "rz":
            return lo if q >= 0 else hi
        return f

    for i in range(128):
        q = _exact(av[i]) * _exact(bv[i]) + _exact(cv[i])
        assert got[i] == rnd(q), (mode, av[i], bv[i], cv[i])
        assert got2[i] == rnd(_exact(av[i]) + _exact(bv[i]))


def test_f16_and_bf16_packed_arithmetic():
    a = Buffer("a", "f16", 256, "random", 31)
    body = """
    add.s64 %rd1, %rd10, %rd0; ld.global.b32 %r1, [%rd1];
    add.rn.f16x2 %r2, %r1, %r1; mul.rn.f16x2 %r3, %r1, %r1; fma.rn.f16x2 %r4, %r1, %r1, %r1;
    mul.wide.u32 %rd3, %r0, 12; add.s64 %rd3, %rd11, %rd3;
    st.global.b32 [%rd3], %r2; st.global.b32 [%rd3+4], %r3; st.global.b32 [%rd3+8], %r4;
    """
    p = make(body, [a, Buffer("o", "f16", 128 * 6, "zeros", output=True)])
    got = out_of(run_program(p), "o", np.float16).reshape(128, 3, 2)
    x = inputs(a, np.float16).reshape(128, 2).astype(np.float64)
    assert np.array_equal(got[:, 0], (x + x).astype(np.float16))
    assert np.array_equal(got[:, 1], (x * x).astype(np.float16))
    assert np.array_equal(got[:, 2], (x * x + x).astype(np.float16))  # x*x exact in float64: one rounding


# ------------------------------------------------------------------ conversions


def test_cvt_integer_sign_handling_and_saturation():
    a = Buffer("a", "s32", 128, "random", 41)
    body = """
    add.s64 %rd1, %rd10, %rd0; ld.global.s32 %r1, [%rd1];
    cvt.s32.s8 %r2, %r1; cvt.u32.u8 %r3, %r1; cvt.sat.u8.s32 %r4, %r1; cvt.sat.s16.s32 %r5, %r1;
    cvt.s64.s32 %rd4, %r1; cvt.u64.u32 %rd5, %r1;
    mul.wide.u32 %rd3, %r0, 32; add.s64 %rd3, %rd11, %rd3;
    st.global.v4.u32 [%rd3], {%r2, %r3, %r4, %r5}; st.global.v2.u64 [%rd3+16], {%rd4, %rd5};
    """
    p = make(body, [a, Buffer("o", "u32", 128 * 8, "zeros", output=True)])
    o = out_of(run_program(p), "o").reshape(128, 8)
    x = inputs(a, np.int32).astype(np.int64)
    assert np.array_equal(o[:, 0].view(np.int32), x.astype(np.int8))
    assert np.array_equal(o[:, 1], x.astype(np.uint8))
    assert np.array_equal(o[:, 2], np.clip(x, 0, 255))
    assert np.array_equal(o[:, 3] & 0xFFFF, np.clip(x, -32768, 32767).astype(np.uint16))
    assert np.array_equal(o[:, 4:6].copy().view(np.int64).ravel(), x)
    assert np.array_equal(o[:, 6:8].copy().view(np.uint64).ravel(), x.astype(np.uint32))


def test_cvt_float_int_rounding_modes():
    a = Buffer("a", "f32", 128, "random", 42)
    body = """
    add.s64 %rd1, %rd10, %rd0; ld.global.f32 %f1, [%rd1];
    mul.f32 %f1, %f1, 0f41200000;
    cvt.rni.s32.f32 %r2, %f1; cvt.rzi.s32.f32 %r3, %f1; cvt.rmi.s32.f32 %r4, %f1; cvt.rpi.u32.f32 %r5, %f1;
    mul.wide.u32 %rd3, %r0, 16; add.s64 %rd3, %rd11, %rd3;
    st.global.v4.u32 [%rd3], {%r2, %r3, %r4, %r5};
    """
    p = make(body, [a, Buffer("o", "u32", 512, "zeros", output=True)])
    o = out_of(run_program(p), "o").reshape(128, 4)
    x = (inputs(a, np.float32) * np.float32(10)).astype(np.float64)
    assert np.array_equal(o[:, 0].view(np.int32), np.round(x))
    assert np.array_equal(o[:, 1].view(np.int32), np.trunc(x))
    assert np.array_equal(o[:, 2].view(np.int32), np.floor(x))
    assert np.array_equal(o[:, 3], np.clip(np.ceil(x), 0, None))  # float -> unsigned saturates at 0


def test_cvt_f32_to_f16_modes_and_int_to_float():
    a = Buffer("a", "f32", 128, "random", 43)
    body = """
    add.s64 %rd1, %rd10, %rd0; ld.global.f32 %f1, [%rd1];
    cvt.rn.f16.f32 %h1, %f1; cvt.rz.f16.f32 %h2, %f1; cvt.rm.f16.f32 %h3, %f1; cvt.rp.f16.f32 %h4, %f1;
    mul.wide.u32 %rd3, %r0, 8; add.s64 %rd3, %rd11, %rd3;
    st.global.v4.b16 [%rd3], {%h1, %h2, %h3, %h4};
    """
    p = make(body, [a, Buffer("o", "f16", 512, "zeros", output=True)])
    o = out_of(run_program(p), "o", np.float16).reshape(128, 4).astype(np.float64)
    x = inputs(a, np.float32).astype(np.float64)
    rn = x.astype(np.float16).astype(np.float64)
    down = np.where(rn > x, np.nextafter(rn.astype(np.float16), np.float16(-np.inf)).astype(np.float64), rn)
    up = np.where(rn < x, np.nextafter(rn.astype(np.float16), np.float16(np.inf)).astype(np.float64), rn)
    assert np.array_equal(o[:, 0], rn)
    assert np.array_equal(o[:, 1], np.where(x >= 0, down, up))
    assert np.array_equal(o[:, 2], down) and np.array_equal(o[:, 3], up)


def test_cvt_packed_f16x2_bf16x2_and_fp8_round_trip():
    a, b = Buffer("a", "f32", 128, "random", 44), Buffer("b", "f32", 128, "special", 45)
    body = """
    add.s64 %rd1, %rd10, %rd0; ld.global.f32 %f1, [%rd1];
    add.s64 %rd2, %rd11, %rd0; ld.global.f32 %f2, [%rd2];
    cvt.rn.f16x2.f32 %r2, %f1, %f2; cvt.rn.bf16x2.f32 %r3, %f1, %f2;
    cvt.rn.satfinite.e4m3x2.f32 %h1, %f1, %f2; cvt.rn.satfinite.e5m2x2.f32 %h2, %f1, %f2;
    cvt.rn.f16x2.e4m3x2 %r4, %h1; cvt.rn.f16x2.e5m2x2 %r5, %h2;
    mul.wide.u32 %rd3, %r0, 16; add.s64 %rd3, %rd12, %rd3;
    st.global.v4.b32 [%rd3], {%r2, %r3, %r4, %r5};
    """
    p = make(body, [a, b, Buffer("o", "u32", 512, "zeros", output=True)])
    o = out_of(run_program(p), "o").reshape(128, 4)
    x, y = inputs(a, np.float32), inputs(b, np.float32)

    def pair(dt, conv=lambda v, dt: v.astype(dt)):
        with np.errstate(all="ignore"):
            lo, hi = conv(y, dt), conv(x, dt)  # a -> upper half, b -> lower half
        return lo.view(np.uint16).astype(np.uint32) | (hi.view(np.uint16).astype(np.uint32) << 16)

    def same(got, want, dt):
        g = got.astype(np.uint32)
        glo, ghi = (g & 0xFFFF).astype(np.uint16).view(dt), (g >> 16).astype(np.uint16).view(dt)
        wlo, whi = (want & 0xFFFF).astype(np.uint16).view(dt), (want >> 16).astype(np.uint16).view(dt)
        eq = lambda u, v: (u.view(np.uint16) == v.view(np.uint16)) | (np.isnan(u.astype(np.float32)) & np.isnan(v.astype(np.float32)))  # noqa: E731
        return (eq(glo, wlo) & eq(ghi, whi)).all()

    assert same(o[:, 0], pair(np.float16), np.float16)
    assert same(o[:, 1], pair(ml_dtypes.bfloat16), ml_dtypes.bfloat16)

    def fp8(dt):
        mx = float(ml_dtypes.finfo(dt).max)
        def conv(v, _):
            with np.errstate(all="ignore"):
                c = np.where(np.isnan(v), np.nan, np.clip(v.astype(np.float64), -mx, mx))
                return c.astype(dt).astype(np.float16)
        return pair(np.float16, conv)

    assert same(o[:, 2], fp8(ml_dtypes.float8_e4m3fn), np.float16)
    assert same(o[:, 3], fp8(ml_dtypes.float8_e5m2), np.float16)


# ------------------------------------------------------------------ moves, memory


def test_mov_pack_unpack_and_vector_loads_every_width():
    a = Buffer("a", "u8", 128 * 16, "random", 51)
    body = """
    mul.wide.u32 %rd0, %r0, 16; add.s64 %rd1, %rd10, %rd0;
    ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];
    ld.global.v2.u64 {%rd4, %rd5}, [%rd1];
    ld.global.u8 %r5, [%rd1+3]; ld.global.s8 %r6, [%rd1+3]; ld.global.u16 %r7, [%rd1+6];
    mov.b32 {%h1, %h2}, %r1; mov.b32 %r8, {%h2, %h1};
    mov.b64 {%r9, %r10}, %rd5; mov.b64 %rd6, {%r2, %r1};
    mul.wide.u32 %rd3, %r0, 48; add.s64 %rd3, %rd11, %rd3;
    st.global.v4.u32 [%rd3], {%r5, %r6, %r7, %r8};
    st.global.v2.u32 [%rd3+16], {%r9, %r10}; st.global.u64 [%rd3+24], %rd6;
    st.global.u64 [%rd3+32], %rd4; st.global.b16 [%rd3+40], %h1; st.global.u8 [%rd3+42], %r3;
    """
    p = make(body, [a, Buffer("o", "u8", 128 * 48, "zeros", output=True)])
    o = out_of(run_program(p), "o", np.uint8).reshape(128, 48)
    x = inputs(a, np.uint8).reshape(128, 16)
    w32 = x.copy().view(np.uint32)
    assert np.array_equal(o[:, 0:4].copy().view(np.uint32).ravel(), x[:, 3])
    assert np.array_equal(o[:, 4:8].copy().view(np.int32).ravel(), x[:, 3].view(np.int8))
    assert np.array_equal(o[:, 8:12].copy().view(np.uint32).ravel(), x[:, 6:8].copy().view(np.uint16).ravel())
    assert np.array_equal(o[:, 12:16].copy().view(np.uint32).ravel(), (w32[:, 0] >> 16) | (w32[:, 0] << 16))
    assert np.array_equal(o[:, 16:24], x[:, 8:16])
    assert np.array_equal(o[:, 24:28], x[:, 4:8]) and np.array_equal(o[:, 28:32], x[:, 0:4])
    assert np.array_equal(o[:, 32:40], x[:, 0:8]) and np.array_equal(o[:, 40:42], x[:, 0:2])
    assert np.array_equal(o[:, 42], x[:, 8])


def test_shared_memory_barrier_and_generic_addresses():
    """Each thread writes shared[tid]; after bar.sync reads shared[127 - tid] through a generic pointer."""
    body = """
    mov.u32 %r1, smem; shl.b32 %r2, %r0, 2; add.u32 %r3, %r1, %r2;
    mul.lo.u32 %r4, %r0, 3; st.shared.u32 [%r3], %r4;
    bar.sync 0;
    sub.u32 %r5, 127, %r0; shl.b32 %r5, %r5, 2; add.u32 %r5, %r1, %r5;
    cvt.u64.u32 %rd4, %r5; cvta.shared.u64 %rd5, %rd4; ld.u32 %r6, [%rd5];
    cvta.to.shared.u64 %rd6, %rd5; cvt.u32.u64 %r7, %rd6; ld.shared.u32 %r8, [%r7];
    add.s64 %rd1, %rd10, %rd0; cvta.to.global.u64 %rd1, %rd1; st.global.u32 [%rd1], %r6;
    add.s64 %rd2, %rd11, %rd0; st.u32 [%rd2], %r8;
    """
    p = make(body, [Buffer("o", "u32", 128, "zeros", output=True), Buffer("o2", "u32", 128, "zeros", output=True)],
             extra=".shared .align 16 .b8 smem[512];")
    r = run_program(p)
    want = (127 - np.arange(128)) * 3
    assert np.array_equal(out_of(r, "o"), want) and np.array_equal(out_of(r, "o2"), want)


def test_uninitialised_shared_and_registers_are_undefined_not_invented():
    body = """
    mov.u32 %r1, smem; shl.b32 %r2, %r0, 2; add.u32 %r3, %r1, %r2;
    ld.shared.u32 %r4, [%r3];
    add.s64 %rd1, %rd10, %rd0; st.global.u32 [%rd1], %r4;
    setp.lt.u32 %p1, %r0, 64; @%p1 mov.u32 %r9, 7;
    add.s64 %rd2, %rd11, %rd0; st.global.u32 [%rd2], %r9;
    """
    p = make(body, [Buffer("o", "u32", 128, "zeros", output=True), Buffer("o2", "u32", 128, "zeros", output=True)],
             extra=".shared .align 16 .b8 smem[512];")
    r = run_program(p)
    assert (r.outputs["o"].kind == UNDEF).all()
    k = r.outputs["o2"].kind
    assert (k[64:] == UNDEF).all() and (k[:64] == 0).all() and (out_of(r, "o2")[:64] == 7).all()
    # compare() skips undefined elements: anything the hardware wrote there is accepted
    obs = {"o": bytes(512), "o2": np.where(np.arange(128) < 64, 7, 12345).astype(np.uint32).tobytes()}
    assert compare(p, r, obs) == []


def test_out_of_bounds_and_misaligned_accesses_name_the_line():
    p = make("add.s64 %rd1, %rd10, %rd0; ld.global.u32 %r1, [%rd1+4];",
             [Buffer("a", "u32", 128, "zeros")])
    with pytest.raises(BadAddress) as e:
        run_program(p)
    assert e.value.line is not None and "out-of-bounds load" in str(e.value) and str(e.value).startswith("test.ptx:")
    p = make("add.s64 %rd1, %rd10, 2; ld.global.u32 %r1, [%rd1];", [Buffer("a", "u32", 128, "zeros")])
    with pytest.raises(BadAddress, match="misaligned"):
        run_program(p)
    p = make("st.global.u32 [%rd10], %r0;", [Buffer("a", "u32", 128, "zeros")])
    run_program(p)  # in bounds: fine


def test_unsupported_instruction_and_bad_launch():
    p = make("brkpt;", [Buffer("a", "u32", 128, "zeros")])
    with pytest.raises(Unsupported, match="brkpt"):
        run_program(p)
    p = make("", [Buffer("a", "u32", 128, "zeros")])
    with pytest.raises(MissingInput, match="grid"):
        run_program(Program(p.module, Launch("k", (2, 1, 1), (128, 1, 1)), p.buffers))
    with pytest.raises(MissingInput, match="threads"):
        run_program(Program(p.module, Launch("k", (1, 1, 1), (1024, 1, 1)), p.buffers))


# ------------------------------------------------------------------ control flow


def test_if_else_with_per_thread_conditions_reconverges():
    body = """
    and.b32 %r1, %r0, 3; mov.u32 %r2, 0;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra A;
    setp.eq.u32 %p2, %r1, 1;
    @%p2 bra B;
    mov.u32 %r2, 30; bra J;
A:  mov.u32 %r2, 10; bra J;
B:  mov.u32 %r2, 20;
J:  add.u32 %r2, %r2, %r0;
    add.s64 %rd1, %rd10, %rd0; st.global.u32 [%rd1], %r2;
    """
    p = make(body, [Buffer("o", "u32", 128, "zeros", output=True)])
    t = np.arange(128)
    want = np.choose(t % 4, [10, 20, 30, 30]) + t
    assert np.array_equal(out_of(run_program(p), "o"), want)


def test_nested_loops_with_per_thread_trip_counts_and_break():
    body = """
    mov.u32 %r1, 0; mov.u32 %r2, 0;
OUTER:
    mov.u32 %r3, 0;
INNER:
    add.u32 %r2, %r2, 1; add.u32 %r3, %r3, 1;
    setp.eq.u32 %p3, %r2, 50;
    @%p3 bra DONE;
    setp.lt.u32 %p1, %r3, %r1;
    @%p1 bra INNER;
    add.u32 %r1, %r1, 1;
    and.b32 %r4, %r0, 7;
    setp.le.u32 %p2, %r1, %r4;
    @%p2 bra OUTER;
DONE:
    add.s64 %rd1, %rd10, %rd0; st.global.u32 [%rd1], %r2;
    """
    p = make(body, [Buffer("o", "u32", 128, "zeros", output=True)])
    got = out_of(run_program(p), "o")
    for t in range(128):
        r1 = r2 = 0
        done = False
        while not done:
            r3 = 0
            while True:
                r2 += 1
                r3 += 1
                if r2 == 50:
                    done = True
                    break
                if not r3 < r1:
                    break
            if done:
                break
            r1 += 1
            if not r1 <= (t & 7):
                break
        assert got[t] == r2


def test_early_exit_and_guarded_store():
    body = """
    setp.ge.u32 %p1, %r0, 100;
    @%p1 exit;
    add.s64 %rd1, %rd10, %rd0;
    setp.lt.u32 %p2, %r0, 10;
    @%p2 st.global.u32 [%rd1], 5;
    @!%p2 st.global.u32 [%rd1], %r0;
    bar.sync 0;
    """
    p = make(body, [Buffer("o", "u32", 128, "ones", output=True)])
    got = out_of(run_program(p), "o")
    t = np.arange(128)
    assert np.array_equal(got, np.where(t < 10, 5, np.where(t < 100, t, 1)))


def test_func_call_with_reg_and_param_arguments():
    extra = """
.func (.reg .b32 res) twice(.reg .b32 x) { add.u32 res, x, x; ret; }
.func (.param .b32 out) addmul(.param .b32 a, .param .b32 b)
{
    .reg .b32 %t<4>;
    ld.param.b32 %t0, [a]; ld.param.b32 %t1, [b];
    setp.gt.u32 %tp, %t0, 60;
    mad.lo.u32 %t2, %t0, %t1, 1;
    @%tp ret;
    add.u32 %t2, %t2, 1000;
    st.param.b32 [out], %t2;
    ret;
}
""".replace("%tp", "%t3")
    extra = extra.replace("setp.gt.u32 %t3", ".reg .pred %q;\n    setp.gt.u32 %q").replace("@%t3 ret", "@%q bra SKIP")
    extra = extra.replace("st.param.b32 [out], %t2;\n    ret;", "SKIP:\n    st.param.b32 [out], %t2;\n    ret;")
    body = """
    call (%r1), twice, (%r0);
    {
    .param .b32 pa; .param .b32 pb; .param .b32 pr;
    st.param.b32 [pa], %r0; st.param.b32 [pb], %r1;
    call (pr), addmul, (pa, pb);
    ld.param.b32 %r2, [pr];
    }
    mul.wide.u32 %rd1, %r0, 8; add.s64 %rd1, %rd10, %rd1; st.global.v2.u32 [%rd1], {%r1, %r2};
    """
    p = make(body, [Buffer("o", "u32", 256, "zeros", output=True)], extra=extra)
    o = out_of(run_program(p), "o").reshape(128, 2)
    t = np.arange(128)
    assert np.array_equal(o[:, 0], 2 * t)
    assert np.array_equal(o[:, 1], t * 2 * t + 1 + np.where(t > 60, 0, 1000))


def test_branch_on_undefined_predicate_makes_the_run_undefined():
    body = """
    setp.eq.u32 %p1, %r30, 1;
    @%p1 bra X;
X:  add.s64 %rd1, %rd10, %rd0; st.global.u32 [%rd1], 1;
    """
    p = make(body, [Buffer("o", "u32", 128, "zeros", output=True)])
    r = run_program(p)
    assert r.undefined and "undefined predicate" in r.undefined
    assert compare(p, r, {"o": bytes(512)}) == []


def test_program_built_from_ir_directly():
    """No parser: a Program assembled from ir dataclasses (out[tid] = tid * n)."""
    R = ir.Reg
    body = (
        ir.RegDecl(".b32", ("%r",), 4), ir.RegDecl(".b64", ("%rd",), 4),
        ir.Instr("ld.param.u64", (R("%rd0"), ir.Addr(ir.Sym("out")))),
        ir.Instr("ld.param.u32", (R("%r1"), ir.Addr(ir.Sym("n")))),
        ir.Instr("mov.u32", (R("%r0"), R("%tid.x"))),
        ir.Instr("mul.lo.u32", (R("%r2"), R("%r0"), R("%r1"))),
        ir.Instr("mul.wide.u32", (R("%rd1"), R("%r0"), ir.Imm.of(4))),
        ir.Instr("add.s64", (R("%rd2"), R("%rd0"), R("%rd1"))),
        ir.Instr("st.global.u32", (ir.Addr(R("%rd2")), R("%r2"))),
        ir.Instr("ret"),
    )
    fn = ir.Function("entry", "k", (ir.Param(".param", ".u64", "out"), ir.Param(".param", ".u32", "n")), body=body,
                     linkage=".visible")
    prog = Program(ir.Module(items=(fn,)), Launch("k", (1, 1, 1), (64, 1, 1)),
                   (Buffer("out", "u32", 64, "zeros", output=True),), (("n", 3),))
    assert np.array_equal(out_of(run_program(prog), "out"), np.arange(64) * 3)


# ------------------------------------------------------------------ compare()


def test_compare_integers_exact_and_float_sets():
    p = make("add.s64 %rd1, %rd10, %rd0; st.global.u32 [%rd1], %r0;", [Buffer("o", "u32", 128, "zeros", output=True)])
    r = run_program(p)
    good = np.arange(128, dtype=np.uint32)
    assert compare(p, r, {"o": good.tobytes()}) == []
    bad = good.copy()
    bad[5] = 99
    m = compare(p, r, {"o": bad.tobytes()})
    assert len(m) == 1 and m[0].index == 5 and "99" in str(m[0])
    assert compare(p, r, {})[0].index == -1  # a missing output buffer is a mismatch


def test_lop3_prmt_sqrt_rcp_and_integral_cvt():
    a, b = Buffer("a", "u32", 128, "random", 61), Buffer("b", "f32", 128, "random", 62)
    body = """
    add.s64 %rd1, %rd10, %rd0; ld.global.u32 %r1, [%rd1];
    add.s64 %rd2, %rd11, %rd0; ld.global.f32 %f1, [%rd2];
    not.b32 %r2, %r1;
    lop3.b32 %r3, %r1, %r2, %r0, 0xE8;
    prmt.b32 %r4, %r1, %r2, 0x7531;
    abs.f32 %f2, %f1; sqrt.rn.f32 %f3, %f2; rcp.rn.f32 %f4, %f1; cvt.rni.f32.f32 %f5, %f1;
    mov.b32 %r5, %f3; mov.b32 %r6, %f4; mov.b32 %r7, %f5;
    mul.wide.u32 %rd3, %r0, 20; add.s64 %rd3, %rd12, %rd3;
    st.global.u32 [%rd3], %r3; st.global.u32 [%rd3+4], %r4; st.global.u32 [%rd3+8], %r5;
    st.global.u32 [%rd3+12], %r6; st.global.u32 [%rd3+16], %r7;
    """
    p = make(body, [a, b, Buffer("o", "u32", 128 * 5, "zeros", output=True)])
    o = out_of(run_program(p), "o").reshape(128, 5)
    x = inputs(a, np.uint32).astype(np.int64)
    y = inputs(b, np.float32)
    t = np.arange(128)
    nx = ~x & 0xFFFFFFFF
    maj = (x & nx) | (x & t) | (nx & t)  # 0xE8 is the majority function
    assert np.array_equal(o[:, 0], maj)
    src = x | (nx << 32)
    want = sum(((src >> (8 * s)) & 0xFF) << (8 * k) for k, s in enumerate((1, 3, 5, 7)))
    assert np.array_equal(o[:, 1], want)
    assert np.array_equal(o[:, 2].view(np.float32), np.sqrt(np.abs(y)))
    assert np.array_equal(o[:, 3].view(np.float32), np.float32(1) / y)
    assert np.array_equal(o[:, 4].view(np.float32), np.round(y))


def test_unrounded_mul_add_may_be_contracted_into_fma():
    """mul.f32 + add.f32 without rounding modifiers: the fused and the unfused results are both allowed."""
    a, b, c = (Buffer(n, "f32", 128, "random", s) for n, s in (("a", 71), ("b", 72), ("c", 73)))
    body = """
    add.s64 %rd1, %rd10, %rd0; ld.global.f32 %f1, [%rd1];
    add.s64 %rd2, %rd11, %rd0; ld.global.f32 %f2, [%rd2];
    add.s64 %rd4, %rd13, %rd0; ld.global.f32 %f4, [%rd4];
    mul.f32 %f5, %f1, %f2; add.f32 %f3, %f5, %f4;
    mul.rn.f32 %f6, %f1, %f2; add.rn.f32 %f7, %f6, %f4;
    mul.wide.u32 %rd3, %r0, 8; add.s64 %rd3, %rd12, %rd3; st.global.v2.f32 [%rd3], {%f3, %f7};
    """
    p = make(body, [a, b, Buffer("o", "f32", 256, "zeros", output=True), c])
    r = run_program(p)
    o = r.outputs["o"]
    av, bv, cv = (inputs(x, np.float32).astype(np.float64) for x in (a, b, c))
    unfused = ((av * bv).astype(np.float32) + cv.astype(np.float32)).astype(np.float32)
    fused = (av * bv + cv).astype(np.float32)  # a*b exact in float64; one rounding (ties aside)
    assert (o.kind[1::2] == 0).all()  # explicit .rn: exact, never fused
    differ = unfused != fused
    assert differ.any() and (o.kind[0::2][differ] == SET).all()
    assert compare(p, r, {"o": np.stack([fused, unfused], 1).tobytes()}) == []
    assert compare(p, r, {"o": np.stack([unfused, unfused], 1).tobytes()}) == []
    assert compare(p, r, {"o": np.stack([unfused, fused], 1).tobytes()}) != []


@pytest.mark.parametrize("t, npt", [("f16", np.float16), ("bf16", None)])
def test_unrounded_half_mul_add_may_be_contracted_into_fma(t, npt):
    """mul + add of f16 (or bf16) without rounding modifiers: ptxas may fold them into one fma
    ("may be folded into a multiply-add"), so both results are allowed.  CuTe's f16 epilogue
    (alpha * acc + beta * C) came out of -O3 on an H200 one ulp off the unfused result; the
    reference allowed only that one, and called 201 elements a mismatch."""
    import ml_dtypes

    npt = npt or ml_dtypes.bfloat16
    a, b, c = (Buffer(n, t, 128, "random", s) for n, s in (("a", 74), ("b", 75), ("c", 76)))
    body = f"""
    mul.wide.u32 %rd0, %r0, 2;
    add.s64 %rd1, %rd10, %rd0; ld.global.b16 %h1, [%rd1];
    add.s64 %rd2, %rd11, %rd0; ld.global.b16 %h2, [%rd2];
    add.s64 %rd4, %rd13, %rd0; ld.global.b16 %h4, [%rd4];
    mul.{t} %h5, %h1, %h2; add.{t} %h3, %h5, %h4;
    mul.rn.{t} %h6, %h1, %h2; add.rn.{t} %h7, %h6, %h4;
    mul.wide.u32 %rd3, %r0, 4; add.s64 %rd3, %rd12, %rd3; st.global.v2.b16 [%rd3], {{%h3, %h7}};
    """
    p = make(body, [a, b, Buffer("o", t, 256, "zeros", output=True), c])
    r = run_program(p)
    o = r.outputs["o"]
    av, bv, cv = (inputs(x, npt).astype(np.float64) for x in (a, b, c))
    unfused = ((av * bv).astype(npt).astype(np.float64) + cv).astype(npt)
    fused = (av * bv + cv).astype(npt)  # a*b exact in float64; one rounding (ties aside)
    assert (o.kind[1::2] == 0).all()  # explicit .rn: exact, never fused
    differ = (unfused != fused) & np.isfinite(fused.astype(np.float64))
    assert differ.any() and (o.kind[0::2][differ] == SET).all()
    assert compare(p, r, {"o": np.stack([fused, unfused], 1).tobytes()}) == []
    assert compare(p, r, {"o": np.stack([unfused, unfused], 1).tobytes()}) == []


def test_a_product_moved_or_negated_before_the_add_may_still_be_fused():
    """ptxas sees through a move and folds a negation into its fma: add(mov(a*b), c) and
    add(neg(a*b), c) may each be one fma, so both results are allowed there too."""
    a, b, c = (Buffer(n, "f32", 128, "random", s) for n, s in (("a", 77), ("b", 78), ("c", 79)))
    body = """
    add.s64 %rd1, %rd10, %rd0; ld.global.f32 %f1, [%rd1];
    add.s64 %rd2, %rd11, %rd0; ld.global.f32 %f2, [%rd2];
    add.s64 %rd4, %rd13, %rd0; ld.global.f32 %f4, [%rd4];
    mul.f32 %f5, %f1, %f2; mov.f32 %f8, %f5; add.f32 %f3, %f8, %f4;
    neg.f32 %f9, %f5; add.f32 %f7, %f9, %f4;
    mul.wide.u32 %rd3, %r0, 8; add.s64 %rd3, %rd12, %rd3; st.global.v2.f32 [%rd3], {%f3, %f7};
    """
    p = make(body, [a, b, Buffer("o", "f32", 256, "zeros", output=True), c])
    r = run_program(p)
    av, bv, cv = (inputs(x, np.float32).astype(np.float64) for x in (a, b, c))
    prod = (av * bv).astype(np.float32).astype(np.float64)
    unfused = np.stack([(prod + cv).astype(np.float32), (-prod + cv).astype(np.float32)], 1)
    fused = np.stack([(av * bv + cv).astype(np.float32), (-(av * bv) + cv).astype(np.float32)], 1)
    differ = (unfused != fused) & np.isfinite(fused)
    assert differ.any() and (r.outputs["o"].kind.reshape(128, 2)[differ] == SET).all()
    assert compare(p, r, {"o": fused.tobytes()}) == []
    assert compare(p, r, {"o": unfused.tobytes()}) == []


def test_a_contraction_that_only_flips_the_sign_of_zero_is_allowed():
    """-2^-14 * 2^-14 underflows to -0 in f16: unfused, -0 + +0 is +0; fused, the exact -2^-28
    rounds to -0.  The two results are equal as numbers and differ as bits, and an H200 stored the
    fused one for CuTe's epilogue: both are allowed."""
    body = """
    mov.b16 %h1, 0x8400; mov.b16 %h2, 0x0400; mov.b16 %h4, 0x0000;
    mul.f16 %h5, %h1, %h2; add.f16 %h3, %h5, %h4;
    mul.wide.u32 %rd0, %r0, 2; add.s64 %rd3, %rd12, %rd0; st.global.b16 [%rd3], %h3;
    """
    p = make(body, [Buffer("a", "u32", 1, "zeros"), Buffer("b", "u32", 1, "zeros"),
                    Buffer("o", "f16", 128, "zeros", output=True)])
    r = run_program(p)
    assert (r.outputs["o"].kind == SET).all()
    for bits in (0x0000, 0x8000):
        assert compare(p, r, {"o": np.full(128, bits, np.uint16).tobytes()}) == []


def test_f64_arithmetic_and_conversions():
    a, b = Buffer("a", "f64", 128, "random", 81), Buffer("b", "f64", 128, "random", 82)
    body = """
    mul.wide.u32 %rd0, %r0, 8;
    add.s64 %rd1, %rd10, %rd0; ld.global.f64 %fd1, [%rd1];
    add.s64 %rd2, %rd11, %rd0; ld.global.f64 %fd2, [%rd2];
    add.f64 %fd3, %fd1, %fd2; mul.rn.f64 %fd4, %fd1, %fd2; div.rn.f64 %fd5, %fd1, %fd2;
    cvt.rn.f32.f64 %f1, %fd5; cvt.f64.f32 %fd6, %f1; mul.rz.f64 %fd7, %fd1, %fd2;
    mul.wide.u32 %rd3, %r0, 48; add.s64 %rd3, %rd12, %rd3;
    st.global.v2.f64 [%rd3], {%fd3, %fd4}; st.global.v2.f64 [%rd3+16], {%fd5, %fd6}; st.global.f64 [%rd3+32], %fd7;
    """
    p = make(body, [a, b, Buffer("o", "f64", 128 * 6, "zeros", output=True)])
    o = out_of(run_program(p), "o", np.float64).reshape(128, 6)
    x, y = inputs(a, np.float64), inputs(b, np.float64)
    assert np.array_equal(o[:, 0], x + y) and np.array_equal(o[:, 1], x * y) and np.array_equal(o[:, 2], x / y)
    assert np.array_equal(o[:, 3], (x / y).astype(np.float32).astype(np.float64))
    from fractions import Fraction
    for i in range(128):  # round toward zero: |result| <= |exact| and within one ulp
        q = Fraction(float(x[i])) * Fraction(float(y[i]))
        r = Fraction(float(o[i, 4]))
        assert abs(r) <= abs(q) and abs(q - r) < abs(Fraction(float(np.spacing(o[i, 4]))))


def test_output_buffer_pickles_sparse_and_bit_exact():
    """A verdict crosses the campaign's process boundary: kinds, bounds and flags travel only where
    not zero, and come back bit for bit (a -0.0 bound included)."""
    import pickle

    from fuzzptx.oracles.reference.result import OutputBuffer

    n = 4096
    kind = np.zeros(n, np.uint8)
    kind[10:20], kind[7] = UNDEF, SET
    lo, hi, flags = np.zeros(n), np.zeros(n), np.zeros(n, np.uint8)
    lo[7], hi[7], flags[7] = -1.5, 2.25, 3
    lo[9] = -0.0
    buf = OutputBuffer("d", "f32", bytes(range(256)) * 64, kind, lo, hi, flags)
    wire = pickle.dumps(buf)
    back = pickle.loads(wire)
    assert (back.name, back.type, back.data) == (buf.name, buf.type, buf.data)
    for a, b in ((back.kind, kind), (back.lo, lo), (back.hi, hi), (back.flags, flags)):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert len(wire) < len(buf.data) + 1024  # dense bounds alone would be 64 KB more
