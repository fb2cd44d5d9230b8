"""Reference interpreter: approximate float instructions (``ex2/lg2/sin/cos/tanh/rcp/sqrt/rsqrt
.approx``) run, and every value derived from one is a bound or free, never claimed bit-exact."""
from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from fuzzptx import launch
from fuzzptx.inputs import read_text
from fuzzptx.oracles.reference import compare, run_program
from fuzzptx.oracles.reference.values import EXACT, SET, UNDEF
from test_reference_scalar import kernel, store

XS = [0.0, 1.0, -1.0, 0.5, 3.25, -7.5, 10.0, -126.5, 200.0, float("-inf"), float("inf"), float("nan"), 1e-30, 2.0]


def f32(vals):
    return [struct.unpack("<I", struct.pack("<f", v))[0] for v in vals]


@pytest.mark.parametrize("op,fn", [("ex2.approx.ftz.f32", lambda x: 2.0 ** x), ("ex2.approx.f32", lambda x: 2.0 ** x),
                                   ("lg2.approx.f32", lambda x: math.log2(x) if x > 0 else None),
                                   ("rcp.approx.ftz.f32", lambda x: 1 / x if x else None),
                                   ("sqrt.approx.f32", lambda x: math.sqrt(x) if x >= 0 else None),
                                   ("rsqrt.approx.f32", lambda x: 1 / math.sqrt(x) if x > 0 else None),
                                   ("sin.approx.f32", math.sin), ("cos.approx.f32", math.cos),
                                   ("tanh.approx.f32", math.tanh)])
def test_an_approximate_op_is_a_bound_around_the_true_value(op, fn):
    p = kernel(f"mov.b32 %f1, %r1; {op} %f2, %f1; mov.b32 %r30, %f2; " + store(), threads=len(XS),
               inputs={"a": (32, f32(XS))})
    ob = run_program(p).outputs["o"]
    assert not (ob.kind == EXACT).any()  # never claimed bit-exact
    for i, x in enumerate(XS):
        try:
            want = fn(x) if math.isfinite(x) else None
        except OverflowError:
            want = None
        if want is None or not math.isfinite(want) or abs(want) > 3e38:
            continue
        assert ob.kind[i] == SET, (op, x)
        assert ob.lo[i] <= want <= ob.hi[i], (op, x, ob.lo[i], ob.hi[i])
        assert ob.hi[i] - ob.lo[i] <= max(abs(want) * 2 ** -7, 2 ** -16), (op, x)  # a bound, not "anything"


def test_what_derives_from_an_approximate_value_is_compared_with_its_tolerance():
    body = ("mov.b32 %f1, %r1; ex2.approx.ftz.f32 %f2, %f1; add.f32 %f3, %f2, 0f3F800000; "
            "mov.b32 %r30, %f3; " + store())
    xs = [0.0, 1.0, 2.5, -3.0]
    p = kernel(body, threads=len(xs), inputs={"a": (32, f32(xs))})
    p = p.__class__(p.module, p.launch, tuple(b if b.name != "o" else b.__class__(b.name, "f32", b.count, b.init, output=True)
                                              for b in p.buffers))
    ref = run_program(p)
    ob = ref.outputs["o"]
    assert (ob.kind == SET).all()
    exact = np.array([2.0 ** x + 1 for x in xs], np.float32)
    assert compare(p, ref, {"o": exact.tobytes()}) == []  # the true value is allowed
    near = np.nextafter(exact, np.float32(np.inf))
    assert compare(p, ref, {"o": near.tobytes()}) == []  # so is an ulp off
    far = exact * np.float32(1.01)
    assert len(compare(p, ref, {"o": far.tobytes()})) == len(xs)  # 1% off is not


def test_an_approximate_op_on_an_undefined_input_is_undefined():
    p = kernel("mov.b32 %f1, %r1; sin.approx.f32 %f2, %f7; mov.b32 %r30, %f2; " + store(), threads=4,
               inputs={"a": (32, f32([1.0] * 4))})
    assert (run_program(p).outputs["o"].kind == UNDEF).all()


def test_triton_attention_runs_past_its_softmax():
    """ex2.approx.ftz.f32 is the softmax of every Triton attention kernel: the second GEMM (P @ V)
    and the epilogue's stmatrix run after it."""
    rel = "tests/data/triton/attn_fwd_tma_fp16_d64_128x64_w4s3.ptx"
    from support.inferred_launches import ROOT
    program = launch.load(read_text(ROOT / rel, what="PTX file"), str(ROOT / rel))
    t = launch.trial(program)
    assert t.error is None, t.error
    assert t.coverage.ran == t.coverage.of == 24


def test_an_integer_test_of_an_approximate_floats_bits_is_decided_where_the_bound_allows():
    """libdevice's log2f tests a float's bits (``setp.lt.u32 %p, %r, 0x7f800000``: finite?); on a
    bound of one sign the bit patterns are contiguous, so the branch is defined, not undefined."""
    body = ("mov.b32 %f1, %r1; ex2.approx.ftz.f32 %f2, %f1; mov.b32 %r5, %f2; "
            "setp.lt.u32 %p1, %r5, 2139095040; selp.u32 %r30, 1, 2, %p1; @%p1 bra DONE; mov.u32 %r30, 3; DONE: "
            + store())
    xs = [0.0, 1.0, -3.0, 5.5]
    p = kernel(body, threads=len(xs), inputs={"a": (32, f32(xs))})
    ref = run_program(p)
    assert ref.undefined is None
    assert (ref.outputs["o"].kind == EXACT).all() and list(np.frombuffer(ref.bytes("o"), np.uint32)) == [1] * 4


def _as_output(p, type_: str, count: int):
    """``p`` with its output buffer ``o`` read as ``count`` elements of ``type_``."""
    bufs = tuple(b if b.name != "o" else b.__class__(b.name, type_, count, b.init, output=True) for b in p.buffers)
    return p.__class__(p.module, p.launch, bufs)


def test_a_bound_stored_through_an_integer_buffer_is_read_as_the_float_it_bounds():
    """Kernels store float results through ``.u32`` buffers (the epilogues the generator draws do):
    the comparison reads such an element's bits as an f32, not as an integer that must match."""
    body = ("mov.b32 %f1, %r1; ex2.approx.ftz.f32 %f2, %f1; add.f32 %f3, %f2, 0f3F800000; "
            "mov.b32 %r30, %f3; " + store())
    xs = [0.0, 1.0, 2.5, -3.0]
    p = kernel(body, threads=len(xs), inputs={"a": (32, f32(xs))})
    assert next(b for b in p.buffers if b.name == "o").type == "u32"
    ref = run_program(p)
    assert (ref.outputs["o"].kind == SET).all()
    exact = np.array([2.0 ** x + 1 for x in xs], np.float32)
    assert compare(p, ref, {"o": exact.tobytes()}) == []
    assert compare(p, ref, {"o": np.nextafter(exact, np.float32(np.inf)).tobytes()}) == []
    assert len(compare(p, ref, {"o": (exact * np.float32(1.01)).tobytes()})) == len(xs)


@pytest.mark.parametrize("fmt", ["bf16", "f16"])
def test_a_16_bit_bound_stored_through_an_integer_buffer_is_read_in_its_own_format(fmt):
    """A bound converted to bf16 and one converted to f16 both sit in 2-byte lanes: the flags say
    which format the bounds are in, so each is read as what it is."""
    import ml_dtypes

    from fuzzptx.oracles.reference.result import OutputBuffer, RefResult
    from fuzzptx.oracles.reference.values import ALT_FORMAT

    body = ("mov.b32 %f1, %r1; ex2.approx.ftz.f32 %f2, %f1; "
            f"cvt.rn.{fmt}.f32 %h1, %f2; "
            "mul.wide.u32 %rd2, %r0, 2; add.s64 %rd2, %rd9, %rd2; st.global.b16 [%rd2], %h1;")
    xs = [0.0, 1.0, 2.5, -3.0, 5.5, -0.75]
    p = _as_output(kernel(body, threads=len(xs), inputs={"a": (32, f32(xs))}), "u16", len(xs))
    ref = run_program(p)
    ob = ref.outputs["o"]
    assert (ob.kind == SET).all()
    assert ((ob.flags & ALT_FORMAT) != 0).all() == (fmt == "bf16") and ((ob.flags & ALT_FORMAT) != 0).any() == (fmt == "bf16")
    dt = ml_dtypes.bfloat16 if fmt == "bf16" else np.float16
    true = np.array([2.0 ** x for x in xs], np.float64).astype(dt)
    assert compare(p, ref, {"o": true.tobytes()}) == []
    assert len(compare(p, ref, {"o": (true.astype(np.float64) * 1.25).astype(dt).tobytes()})) == len(xs)
    # a bound two steps of the format wide: its far edge is allowed, though not the reference's bits
    lo, hi = true.astype(np.float64), np.nextafter(np.nextafter(true, dt(np.inf)), dt(np.inf)).astype(np.float64)
    wide = RefResult({"o": OutputBuffer("o", "u16", ob.data, ob.kind, lo, hi, ob.flags)})
    far = hi.astype(dt)
    assert far.tobytes() != ob.data
    assert compare(p, wide, {"o": far.tobytes()}) == []
    assert compare(p, wide, {"o": np.nextafter(far, dt(np.inf)).tobytes()})
