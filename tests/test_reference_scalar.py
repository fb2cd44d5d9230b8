"""Reference interpreter: the scalar instructions of issue 37 (bit fields, shuffles, votes, carry chains,
packed 16-bit, video, conversions, .local, atomics, special registers).

Expected values are computed here from the PTX ISA's pseudocode one bit / one lane at a time in
plain Python integers, independently of the vectorised numpy code under test.
"""
from __future__ import annotations

import random
import struct

import numpy as np
import pytest

from fuzzptx.oracles.reference import Unsupported, run_program
from fuzzptx.oracles.reference.values import UNDEF
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.parse import parse

DECLS = ".reg .b16 %h<8>; .reg .b32 %r<40>; .reg .b64 %rd<24>; .reg .f32 %f<8>; .reg .pred %p<8>;"
EDGE32 = [0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 31, 32, 33, 63, 64, 255, 256, 0xFF, 0x100]
EDGE64 = [0, 1, (1 << 64) - 1, 1 << 63, (1 << 63) - 1, 63, 64, 65, 0xFFFFFFFF, 1 << 32]


def words(values, width: int) -> str:
    dt = np.uint32 if width == 32 else np.uint64
    return "hex:" + np.array(values, dt).tobytes().hex()


def kernel(body: str, *, threads: int = 64, inputs: dict[str, tuple[int, list[int]]], out_words: int = 1,
           out_width: int = 32, extra: str = "") -> Program:
    """A kernel whose thread i reads ``%ra<k>`` / ``%rda<k>`` from input buffer k at index i and
    stores ``%r30`` (or ``%rd20`` with out_width 64) ``out_words`` times to o[i*out_words + j]."""
    bufs = [Buffer(name, "u32" if w == 32 else "u64", threads, words(vals, w)) for name, (w, vals) in inputs.items()]
    bufs.append(Buffer("o", "u32" if out_width == 32 else "u64", threads * out_words, "zeros", output=True))
    params = ", ".join(f".param .u64 {b.name}" for b in bufs)
    loads = []
    for k, (name, (w, _)) in enumerate(inputs.items()):
        loads.append(f"ld.param.u64 %rd{k + 10}, [{name}];")
        loads.append(f"mul.wide.u32 %rd8, %r0, {w // 8}; add.s64 %rd8, %rd{k + 10}, %rd8;")
        loads.append(f"ld.global.u{w} {'%r' if w == 32 else '%rd'}{k + 1}, [%rd8];")
    text = f""".version 8.0
.target sm_90a
.address_size 64
{extra}
.visible .entry k({params})
{{
{DECLS}
mov.u32 %r0, %tid.x;
{chr(10).join(loads)}
ld.param.u64 %rd9, [o];
{body}
ret;
}}
"""
    return Program(parse(text, "t.ptx"), Launch("k", (1, 1, 1), (threads, 1, 1)), tuple(bufs))


def store(reg: str = "%r30", j: int = 0, words_per_thread: int = 1, width: int = 32) -> str:
    return (f"mul.wide.u32 %rd2, %r0, {words_per_thread * width // 8}; add.s64 %rd2, %rd9, %rd2; "
            f"st.global.u{width} [%rd2+{j * width // 8}], {reg};")


def outputs(p: Program, width: int = 32):
    r = run_program(p)
    ob = r.outputs["o"]
    dt = np.uint32 if width == 32 else np.uint64
    return np.frombuffer(r.bytes("o"), dt), ob


def rand_with_edges(rng: random.Random, n: int, width: int, edges) -> list[int]:
    return [rng.choice(edges) if rng.random() < 0.4 else rng.getrandbits(width) for _ in range(n)]


# ------------------------------------------------------------------ bfe


def bfe_ref(a: int, b: int, c: int, w: int, signed: bool) -> int:
    """The ISA's pseudocode, bit by bit."""
    msb = w - 1
    pos, ln = b & 0xFF, c & 0xFF
    sbit = 0 if (not signed or ln == 0) else (a >> min(pos + ln - 1, msb)) & 1
    d = 0
    for i in range(w):
        bit = (a >> (pos + i)) & 1 if (i < ln and pos + i <= msb) else sbit
        d |= bit << i
    return d


@pytest.mark.parametrize("t", ["u32", "s32", "u64", "s64"])
def test_bfe_matches_the_isa_pseudocode_on_edges_and_random(t):
    rng = random.Random(7)
    w = int(t[1:])
    n = 128
    a = rand_with_edges(rng, n, w, EDGE32 if w == 32 else EDGE64)
    small = [0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 200, 255, 256, 257, 0x1FF, 0xFFFFFFFF]
    b = [rng.choice(small) if rng.random() < 0.5 else rng.getrandbits(32) for _ in range(n)]
    c = [rng.choice(small) if rng.random() < 0.5 else rng.getrandbits(32) for _ in range(n)]
    ra = "%r1" if w == 32 else "%rd1"
    dst = "%r30" if w == 32 else "%rd20"
    body = (f"bfe.{t} {dst}, {ra}, %r2, %r3;" + store(dst, width=w))
    p = kernel(body, threads=n, inputs={"a": (w, a), "b": (32, b), "c": (32, c)}, out_width=w)
    got, _ = outputs(p, w)
    exp = [bfe_ref(x, y, z, w, t[0] == "s") for x, y, z in zip(a, b, c)]
    assert [int(v) for v in got] == exp


def test_bfe_of_an_undefined_input_is_undefined_not_invented():
    p = kernel("bfe.u32 %r30, %r11, %r2, %r3;" + store(), threads=32,
               inputs={"a": (32, [1] * 32), "b": (32, [0] * 32), "c": (32, [8] * 32)})
    _, ob = outputs(p)
    assert (ob.kind == UNDEF).all()


# ------------------------------------------------------------------ shfl.sync


def shfl_ref(mode: str, vals: list[int], b: int, c: int, active: list[bool]) -> list[tuple[int | None, int]]:
    """Per lane of one warp: (value or None when unpredictable, pval), from the ISA's pseudocode."""
    out = []
    for lane in range(32):
        bval, cval, seg = b & 0x1F, c & 0x1F, (c >> 8) & 0x1F
        max_lane = (lane & seg) | (cval & ~seg & 0x1F)
        min_lane = lane & seg
        if mode == "up":
            j = lane - bval
            pval = j >= max_lane
        elif mode == "down":
            j = lane + bval
            pval = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            pval = j <= max_lane
        else:
            j = min_lane | (bval & ~seg & 0x1F)
            pval = j <= max_lane
        if not pval:
            j = lane
        out.append((vals[j] if active[j] else None, int(pval)))
    return out


SHFL_CASES = [("up", 1, 0), ("up", 5, 0x1F00 | 0), ("up", 3, 0x1800), ("down", 1, 0x1F), ("down", 4, 0x181F),
              ("down", 31, 0x1F), ("bfly", 1, 0x1F), ("bfly", 16, 0x1F), ("bfly", 3, 0x1C1F), ("idx", 0, 0x1F),
              ("idx", 7, 0x1F), ("idx", 2, 0x181F), ("idx", 13, 0x1007), ("down", 2, 0x0F), ("bfly", 9, 0x0B)]


@pytest.mark.parametrize("mode,b,c", SHFL_CASES)
def test_shfl_sync_values_and_predicate_follow_the_isa(mode, b, c):
    rng = random.Random(hash((mode, b, c)) & 0xFFFF)
    n = 64
    vals = [rng.getrandbits(32) for _ in range(n)]
    body = (f"shfl.sync.{mode}.b32 %r30|%p1, %r1, {b}, {c}, 0xffffffff; selp.u32 %r31, 1, 0, %p1;"
            + store("%r30", 0, 2) + store("%r31", 1, 2))
    p = kernel(body, threads=n, inputs={"a": (32, vals)}, out_words=2)
    got, ob = outputs(p)
    got = got.reshape(n, 2)
    for w in range(2):
        exp = shfl_ref(mode, vals[32 * w:32 * w + 32], b, c, [True] * 32)
        for lane, (v, pv) in enumerate(exp):
            assert int(got[32 * w + lane, 1]) == pv
            assert int(got[32 * w + lane, 0]) == v


def test_shfl_from_a_guarded_off_lane_is_undefined_and_outside_membermask_is_undefined_run():
    n = 32
    vals = list(range(100, 100 + n))
    # odd lanes are guarded off; every lane of the mask reaches the shfl
    body = ("and.b32 %r5, %r0, 1; setp.eq.u32 %p2, %r5, 0; mov.u32 %r30, 0;"
            "@%p2 shfl.sync.bfly.b32 %r30, %r1, 1, 0x1f, 0xffffffff;" + store())
    p = kernel(body, threads=n, inputs={"a": (32, vals)})
    got, ob = outputs(p)
    kind = ob.kind
    even = np.arange(n) % 2 == 0
    # an even lane reads from its odd neighbour, which was guarded off: unpredictable
    assert (kind[even] == UNDEF).all()
    assert (got[~even] == 0).all() and (kind[~even] != UNDEF).all()
    # a lane outside its own membermask: the whole run is undefined
    p2 = kernel("shfl.sync.idx.b32 %r30, %r1, 0, 0x1f, 0xfffffffe;" + store(), threads=n,
                inputs={"a": (32, vals)})
    assert run_program(p2).undefined is not None


def test_shfl_with_members_on_another_path_is_refused_in_one_line():
    n = 32
    body = ("setp.lt.u32 %p2, %r0, 16; @%p2 bra L1; shfl.sync.idx.b32 %r30, %r1, 0, 0x1f, 0xffffffff; bra L2;"
            "L1: shfl.sync.idx.b32 %r30, %r1, 1, 0x1f, 0xffffffff; L2:" + store())
    p = kernel(body, threads=n, inputs={"a": (32, list(range(n)))})
    with pytest.raises(Unsupported, match="membermask 0xffffffff names lane"):
        run_program(p)


def test_shfl_with_half_masks_on_two_paths_runs():
    n = 32
    body = ("setp.lt.u32 %p2, %r0, 16; @%p2 bra L1; shfl.sync.idx.b32 %r30, %r1, 3, 0x1f, 0xffff0000; bra L2;"
            "L1: shfl.sync.idx.b32 %r30, %r1, 5, 0x1f, 0x0000ffff; L2:" + store())
    vals = [7 * i + 1 for i in range(n)]
    got, ob = outputs(kernel(body, threads=n, inputs={"a": (32, vals)}))
    assert list(map(int, got[:16])) == [vals[5]] * 16
    # upper half: idx 3 names lane 3, which is not executing this shfl: unpredictable
    assert (ob.kind[16:] == UNDEF).all()


def test_shfl_in_a_partial_warp_reads_absent_lanes_as_undefined():
    n = 40  # warp 1 has lanes 0..7 only
    vals = list(range(n))
    body = "shfl.sync.down.b32 %r30, %r1, 4, 0x1f, 0xffffffff;" + store()
    got, ob = outputs(kernel(body, threads=n, inputs={"a": (32, vals)}))
    assert list(map(int, got[32:36])) == [36, 37, 38, 39]
    assert (ob.kind[36:40] == UNDEF).all()


# ------------------------------------------------------------------ every thread against a Python model


def _run_form(text: str, ins: tuple, outs: tuple, seed: int = 3, threads: int = 64):
    """(inputs [threads, nin] as ints, outputs [threads, nout], UNDEF mask) of a form on fresh data."""
    from fuzzptx.oracles.reference.coverage import Form
    from support.hw_scalar import program

    p = program(Form("test", text, ins, outs), seed, threads)
    r = run_program(p)
    assert r.undefined is None, r.undefined
    inp = np.frombuffer(bytes.fromhex(p.buffers[0].init[4:]), np.uint64).reshape(threads, -1)
    ob = r.outputs["out"]
    out = np.frombuffer(ob.data, np.uint64).reshape(threads, -1)
    return [[int(x) for x in row] for row in inp], [[int(x) for x in row] for row in out], \
        (ob.kind == UNDEF).reshape(threads, -1)


def per_thread(text, ins, outs, fn, seeds=(1, 2, 3)):
    """Every defined output of every thread equals ``fn(*inputs)`` (a tuple, None where UNDEF is expected)."""
    for seed in seeds:
        inp, out, und = _run_form(text, ins, outs, seed)
        for t, (x, y) in enumerate(zip(inp, out)):
            exp = fn(*x)
            for k, e in enumerate(exp):
                if e is None:
                    assert und[t, k], (text, t, x)
                else:
                    assert not und[t, k] and y[k] == e, (text, t, [hex(v) for v in x], hex(y[k]), hex(e))


M32, M64 = (1 << 32) - 1, (1 << 64) - 1


def s(x: int, w: int) -> int:
    x &= (1 << w) - 1
    return x - (1 << w) if x >> (w - 1) else x


@pytest.mark.parametrize("t,w", [("u32", 32), ("u64", 64), ("s64", 64)])
def test_carry_chains_add_sub_mad(t, w):
    m = (1 << w) - 1
    k = f"u{w}"

    def add(a0, a1, a2, a3):
        s0 = a0 + a1
        c = s0 >> w
        s1 = a2 + a3 + c
        return s0 & m, s1 & m, s1 >> w

    def sub(a0, a1, a2, a3):
        d0 = a0 - a1
        b = int(d0 < 0)
        d1 = a2 - a3 - b
        return d0 & m, d1 & m, (0 - 0 - int(d1 < 0)) & m

    per_thread(f"add.cc.{t} {{d0}}, {{a0}}, {{a1}}; addc.cc.{t} {{d1}}, {{a2}}, {{a3}}; addc.{t} {{d2}}, 0, 0;",
               (k,) * 4, (f"b{w}",) * 3, add)
    per_thread(f"sub.cc.{t} {{d0}}, {{a0}}, {{a1}}; subc.cc.{t} {{d1}}, {{a2}}, {{a3}}; subc.{t} {{d2}}, 0, 0;",
               (k,) * 4, (f"b{w}",) * 3, sub)
    signed = t[0] == "s"

    def mad(a0, a1, a2, a3, a4, a5):
        x = (s(a0, w) * s(a1, w)) if signed else a0 * a1
        lo = (x & m) + a2
        c = lo >> w
        y = (s(a3, w) * s(a4, w)) if signed else a3 * a4
        hi = ((y >> w) & m) + a5 + c
        return lo & m, hi & m, (((x >> w) & m) + (hi >> w)) & m

    per_thread(f"mad.lo.cc.{t} {{d0}}, {{a0}}, {{a1}}, {{a2}}; madc.hi.cc.{t} {{d1}}, {{a3}}, {{a4}}, {{a5}};"
               f" madc.hi.{t} {{d2}}, {{a0}}, {{a1}}, 0;", (k,) * 6, (f"b{w}",) * 3, mad)


def test_packed_16x2_add_min_max_relu():
    def lanes(x, signed):
        return [s(x >> (16 * i), 16) if signed else (x >> (16 * i)) & 0xFFFF for i in range(2)]

    def pack(v):
        return (v[0] & 0xFFFF) | ((v[1] & 0xFFFF) << 16)

    for t in ("u16x2", "s16x2"):
        sg = t[0] == "s"
        for op, f in (("add", lambda x, y: x + y), ("min", min), ("max", max)):
            per_thread(f"{op}.{t} {{d0}}, {{a0}}, {{a1}};", ("u32", "u32"), ("b32",),
                       lambda a, b, f=f, sg=sg: (pack([f(x, y) for x, y in zip(lanes(a, sg), lanes(b, sg))]),))
    per_thread("max.relu.s16x2 {d0}, {a0}, {a1};", ("u32", "u32"), ("b32",),
               lambda a, b: (pack([max(x, y, 0) for x, y in zip(lanes(a, True), lanes(b, True))]),))
    per_thread("min.relu.s32 {d0}, {a0}, {a1};", ("u32", "u32"), ("b32",), lambda a, b: (max(min(s(a, 32), s(b, 32)), 0),))


def test_mul24_mad24_sad_dp4a_dp2a():
    per_thread("mul24.hi.s32 {d0}, {a0}, {a1};", ("u32", "u32"), ("b32",),
               lambda a, b: (((s(a, 24) * s(b, 24)) >> 16) & M32,))
    per_thread("mul24.lo.u32 {d0}, {a0}, {a1};", ("u32", "u32"), ("b32",), lambda a, b: (((a & 0xFFFFFF) * (b & 0xFFFFFF)) & M32,))
    per_thread("mad24.hi.sat.s32 {d0}, {a0}, {a1}, {a2};", ("u32",) * 3, ("b32",),
               lambda a, b, c: (max(min(s((s(a, 24) * s(b, 24)) >> 16, 32) + s(c, 32), M32 >> 1), -(1 << 31)) & M32,))
    per_thread("sad.s32 {d0}, {a0}, {a1}, {a2};", ("u32",) * 3, ("b32",), lambda a, b, c: ((c + abs(s(a, 32) - s(b, 32))) & M32,))
    per_thread("dp4a.s32.u32 {d0}, {a0}, {a1}, {a2};", ("u32",) * 3, ("b32",),
               lambda a, b, c: ((c + sum(s(a >> 8 * i, 8) * ((b >> 8 * i) & 0xFF) for i in range(4))) & M32,))
    per_thread("dp2a.hi.u32.s32 {d0}, {a0}, {a1}, {a2};", ("u32",) * 3, ("b32",),
               lambda a, b, c: ((c + sum(((a >> 16 * i) & 0xFFFF) * s(b >> 8 * (2 + i), 8) for i in range(2))) & M32,))


def test_bmsk_szext_fns_bfi_bfind_shf_follow_the_isa_pseudocode():
    def bmsk(a, b, clamp):
        a1, b1 = a & 31, b & 31
        mask0 = (M32 << a1) & M32
        s_ = a1 + b1
        mask1 = (M32 << s_) & M32 if s_ < 32 else 0
        over = s_ >= 32 or (clamp and (a >= 32 or b >= 32))
        if clamp and a >= 32:
            mask0 = 0
        if over:
            mask1 = 0
        elif b1 == 0:
            mask1 = M32
        return (mask0 & ~mask1 & M32,)

    for mode in ("wrap", "clamp"):
        per_thread(f"bmsk.{mode}.b32 {{d0}}, {{a0}}, {{a1}};", ("sh", "sh"), ("b32",),
                   lambda a, b, c=mode == "clamp": bmsk(a, b, c))

    def szext(a, b, clamp, signed):
        b1 = b & 31
        too = b >= 32 and clamp
        mask = 0 if too else (M32 << b1) & M32
        sb = False if (b1 == 0 or too or not signed) else bool((a >> ((b1 - 1) & 31)) & 1)
        return (((a & ~mask) | (mask if sb else 0)) & M32,)

    for mode in ("wrap", "clamp"):
        for t in ("u32", "s32"):
            per_thread(f"szext.{mode}.{t} {{d0}}, {{a0}}, {{a1}};", ("u32", "sh"), ("b32",),
                       lambda a, b, c=mode == "clamp", sg=t == "s32": szext(a, b, c, sg))

    def fns(mk, base, off):
        if base > 31:
            return (None,)
        off = s(off, 32)
        if off == 0:
            return (base if mk >> base & 1 else M32,)
        pos, cnt, inc = base, abs(off) - 1, 1 if off > 0 else -1
        while 0 <= pos < 32:
            if mk >> pos & 1:
                if cnt == 0:
                    return (pos,)
                cnt -= 1
            pos += inc
        return (M32,)

    per_thread("fns.b32 {d0}, {a0}, {a1}, {a2};", ("u32", "lane", "soff"), ("b32",), fns)

    def bfi(a, b, c, d, w):
        pos, ln = c & 0xFF, d & 0xFF
        r = b
        for i in range(ln):
            if pos + i < w:
                r = (r & ~(1 << (pos + i))) | (((a >> i) & 1) << (pos + i))
        return (r & ((1 << w) - 1),)

    per_thread("bfi.b32 {d0}, {a0}, {a1}, {a2}, {a3};", ("u32", "u32", "pos", "pos"), ("b32",), lambda *x: bfi(*x, 32))
    per_thread("bfi.b64 {d0}, {a0}, {a1}, {a2}, {a3};", ("u64", "u64", "pos", "pos"), ("b64",), lambda *x: bfi(*x, 64))

    def bfind(a, w, signed, shiftamt):
        if signed and a >> (w - 1):
            a = ~a & ((1 << w) - 1)
        if a == 0:
            return (M32,)
        p = a.bit_length() - 1
        return ((w - 1 - p) if shiftamt else p,)

    for t, w in (("u32", 32), ("s32", 32), ("u64", 64), ("s64", 64)):
        for sa in (False, True):
            per_thread(f"bfind{'.shiftamt' if sa else ''}.{t} {{d0}}, {{a0}};", (f"u{w}",), ("b32",),
                       lambda a, w=w, sg=t[0] == "s", sa=sa: bfind(a, w, sg, sa))

    def shf(a, b, c, left, clamp):
        n = min(c, 32) if clamp else c & 31
        x = (b << 32) | a
        return ((((x << n) >> 32) if left else (x >> n)) & M32,)

    for d in ("l", "r"):
        for mode in ("wrap", "clamp"):
            per_thread(f"shf.{d}.{mode}.b32 {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32", "u32", "sh"), ("b32",),
                       lambda a, b, c, lf=d == "l", cl=mode == "clamp": shf(a, b, c, lf, cl))


PRMT_TABLE = {  # the ISA's table: result bytes b0..b3 for c[1:0] = 0..3
    "f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
    "b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
    "rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
    "ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
    "ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
    "rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]],
}


@pytest.mark.parametrize("mode", sorted(PRMT_TABLE))
def test_prmt_modes_follow_the_isa_table(mode):
    def f(a, b, c):
        src = a | (b << 32)
        return (sum(((src >> 8 * p) & 0xFF) << 8 * k for k, p in enumerate(PRMT_TABLE[mode][c & 3])),)

    per_thread(f"prmt.b32.{mode} {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32",) * 3, ("b32",), f)


def test_set_and_slct():
    per_thread("set.lt.u32.s32 {d0}, {a0}, {a1};", ("u32", "u32"), ("b32",), lambda a, b: (M32 if s(a, 32) < s(b, 32) else 0,))
    per_thread("set.hs.and.f32.u32 {d0}, {a0}, {a1}, {a2};", ("u32", "u32", "pred"), ("b32",),
               lambda a, b, p: (0x3F800000 if (a >= b and p) else 0,))
    per_thread("slct.b32.s32 {d0}, {a0}, {a1}, {a2};", ("u32",) * 3, ("b32",), lambda a, b, c: (a if s(c, 32) >= 0 else b,))
    per_thread("slct.b32.f32 {d0}, {a0}, {a1}, {a2};", ("u32", "u32", "f32"), ("b32",),
               lambda a, b, c: (a if (c == 0x80000000 or (c >> 31 == 0 and (c & 0x7FFFFFFF) <= 0x7F800000)) else b,))


def _video_lanes(x: int, n: int, signed: bool) -> list[int]:
    w = 32 // n
    return [s(x >> (w * i), w) if signed else (x >> (w * i)) & ((1 << w) - 1) for i in range(n)]


@pytest.mark.parametrize("op", ["vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax"])
@pytest.mark.parametrize("n", [2, 4])
def test_simd_video_merge_sat_and_add_forms(op, n):
    w = 32 // n
    fn = {"vadd": lambda x, y: x + y, "vsub": lambda x, y: x - y,
          "vavrg": lambda x, y: (x + y + 1) >> 1 if x + y >= 0 else (x + y) >> 1,
          "vabsdiff": lambda x, y: abs(x - y), "vmin": min, "vmax": max}[op]
    for types in ("u32.u32.u32", "s32.s32.s32", "s32.u32.s32"):
        dt, at, bt = types.split(".")
        for sat in (False, True):
            def f(a, b, c, dt=dt, at=at, bt=bt, sat=sat):
                r = 0
                for i, (x, y) in enumerate(zip(_video_lanes(a, n, at == "s32"), _video_lanes(b, n, bt == "s32"))):
                    t = fn(x, y)
                    if sat:
                        t = max(min(t, (1 << (w - 1)) - 1), -(1 << (w - 1))) if dt == "s32" else max(min(t, (1 << w) - 1), 0)
                    r |= (t & ((1 << w) - 1)) << (w * i)
                return (r,)

            per_thread(f"{op}{n}.{types}{'.sat' if sat else ''} {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32",) * 3, ("b32",), f,
                       seeds=(5,))

    def acc(a, b, c):
        t = sum(fn(x, y) for x, y in zip(_video_lanes(a, n, True), _video_lanes(b, n, True)))
        return ((c + t) & M32,)

    per_thread(f"{op}{n}.s32.s32.s32.add {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32",) * 3, ("b32",), acc, seeds=(6,))


def test_simd_video_selectors_and_destination_mask():
    def f(a, b, c):  # vadd4.u32.u32.u32 d.b20, a.b3120, b.b7654, c: bytes 0 and 2 written, 1 and 3 from c
        src = a | (b << 32)
        asel, bsel = [0, 2, 1, 3], [4, 5, 6, 7]
        r = c
        for i in (0, 2):
            t = ((src >> 8 * asel[i]) & 0xFF) + ((src >> 8 * bsel[i]) & 0xFF)
            r = (r & ~(0xFF << 8 * i)) | ((t & 0xFF) << 8 * i)
        return (r & M32,)

    per_thread("vadd4.u32.u32.u32 {d0}.b20, {a0}.b3120, {a1}.b7654, {a2};", ("u32",) * 3, ("b32",), f)


def test_scalar_video_select_saturate_secondary_and_merge():
    def part(x, sel, signed):
        w = 8 if sel[0] == "b" else 16
        return s(x >> (w * int(sel[1:])), w) if signed else (x >> (w * int(sel[1:]))) & ((1 << w) - 1)

    per_thread("vadd.s32.s32.s32.add {d0}, {a0}.b1, {a1}.h0, {a2};", ("u32",) * 3, ("b32",),
               lambda a, b, c: ((part(a, "b1", True) + part(b, "h0", True) + s(c, 32)) & M32,))
    per_thread("vsub.u32.u32.u32.sat {d0}, {a0}, {a1};", ("u32", "u32"), ("b32",), lambda a, b: (max(a - b, 0),))
    per_thread("vmax.u32.u32.u32.max {d0}, {a0}, {a1}.b2, {a2};", ("u32",) * 3, ("b32",),
               lambda a, b, c: (max(a, part(b, "b2", False), c),))
    per_thread("vabsdiff.u32.u32.u32.sat {d0}.b1, {a0}.h1, {a1}.b3, {a2};", ("u32",) * 3, ("b32",),
               lambda a, b, c: ((c & ~0xFF00) | (min(abs(part(a, "h1", False) - part(b, "b3", False)), 255) << 8),))
    per_thread("vset.s32.u32.lt {d0}, {a0}, {a1};", ("u32", "u32"), ("b32",), lambda a, b: (int(s(a, 32) < b),))

    def vshr(a, b, clamp):
        n = min(b, 32) if clamp else b & 31
        return ((s(a, 32) >> n) & M32,)

    per_thread("vshr.s32.s32.u32.clamp {d0}, {a0}, {a1};", ("u32", "sh"), ("b32",), lambda a, b: vshr(a, b, True))
    per_thread("vshl.u32.u32.u32.wrap {d0}, {a0}, {a1};", ("u32", "sh"), ("b32",), lambda a, b: ((a << (b & 31)) & M32,))


# ------------------------------------------------------------------ warp votes, match, redux, lane masks


def _per_warp(text, ins, outs, fn, seeds=(1, 2)):
    """``fn(list of the warp's input rows) -> list of output rows`` (None: UNDEF expected)."""
    for seed in seeds:
        inp, out, und = _run_form(text, ins, outs, seed)
        for w in range(0, len(inp), 32):
            exp = fn(inp[w:w + 32])
            for lane, row in enumerate(exp):
                for k, e in enumerate(row):
                    if e is None:
                        assert und[w + lane, k]
                    else:
                        assert out[w + lane][k] == e, (text, w + lane, k, hex(out[w + lane][k]), hex(e))


def test_vote_match_redux_over_each_warp():
    def ballot(rows):
        b = sum(r[0] << i for i, r in enumerate(rows))
        return [(b,)] * 32

    _per_warp("vote.sync.ballot.b32 {d0}, {a0}, 0xffffffff;", ("pred",), ("b32",), ballot)
    _per_warp("vote.sync.all.pred {d0}, {a0}, 0xffffffff;", ("pred",), ("pred",),
              lambda rows: [(int(all(r[0] for r in rows)),)] * 32)
    _per_warp("vote.sync.uni.pred {d0}, {a0}, 0xffffffff;", ("pred",), ("pred",),
              lambda rows: [(int(len({r[0] for r in rows}) == 1),)] * 32)

    def match_any(rows):
        return [(sum(1 << j for j, q in enumerate(rows) if q[0] == r[0]),) for r in rows]

    _per_warp("match.any.sync.b32 {d0}, {a0}, 0xffffffff;", ("small",), ("b32",), match_any)

    def match_all(rows):
        same = len({r[0] for r in rows}) == 1
        return [(M32 if same else 0, int(same))] * 32

    _per_warp("match.all.sync.b32 {d0}|{d1}, {a0}, 0xffffffff;", ("rare",), ("b32", "pred"), match_all)
    _per_warp("redux.sync.min.s32 {d0}, {a0}, 0xffffffff;", ("u32",), ("b32",),
              lambda rows: [(min(s(r[0], 32) for r in rows) & M32,)] * 32)
    _per_warp("redux.sync.add.u32 {d0}, {a0}, 0xffffffff;", ("u32",), ("b32",),
              lambda rows: [(sum(r[0] for r in rows) & M32,)] * 32)

    def even_odd(rows):  # membermask: lanes of the same parity
        out = []
        for lane in range(32):
            b = sum((1 - rows[j][0]) << j for j in range(lane % 2, 32, 2))
            out.append((b,))
        return out

    _per_warp("and.b32 %rs4, %rs0, 1; setp.eq.u32 %ps0, %rs4, 0; selp.b32 %rs4, 0x55555555, 0xaaaaaaaa, %ps0;"
              " vote.sync.ballot.b32 {d0}, !{a0}, %rs4;", ("pred",), ("b32",), even_odd)


def test_lane_masks_and_machine_picked_registers():
    for name, f in (("%lanemask_eq", lambda ln: 1 << ln), ("%lanemask_le", lambda ln: (2 << ln) - 1),
                    ("%lanemask_lt", lambda ln: (1 << ln) - 1), ("%lanemask_ge", lambda ln: M32 & ~((1 << ln) - 1)),
                    ("%lanemask_gt", lambda ln: M32 & ~((2 << ln) - 1))):
        _per_warp(f"mov.u32 {{d0}}, {name};", (), ("b32",), lambda rows, f=f: [(f(ln),) for ln in range(32)])
    for name in ("%clock", "%smid", "%warpid", "%globaltimer_lo", "%total_smem_size"):
        _per_warp(f"mov.u32 {{d0}}, {name};", (), ("b32",), lambda rows: [(None,)] * 32, seeds=(1,))


# ------------------------------------------------------------------ atomics and .local


@pytest.mark.parametrize("space", ["global", "shared"])
def test_atomics_on_an_own_slot_return_the_old_value_and_leave_the_new(space):
    cases = {"add.u32": lambda o, b: (o + b) & M32, "min.s32": lambda o, b: min(s(o, 32), s(b, 32)) & M32,
             "inc.u32": lambda o, b: 0 if o >= b else o + 1, "dec.u32": lambda o, b: b if (o == 0 or o > b) else o - 1,
             "exch.b32": lambda o, b: b, "xor.b32": lambda o, b: o ^ b}
    for op, f in cases.items():
        per_thread(f"st.{space}.b32 [%own_{space}], {{a0}}; atom.{space}.{op} {{d0}}, [%own_{space}], {{a1}};"
                   f" ld.{space}.b32 {{d1}}, [%own_{space}];", ("u32", "u32"), ("b32", "b32"),
                   lambda o, b, f=f: (o, f(o, b)), seeds=(4,))
    per_thread(f"st.{space}.b64 [%own_{space}], {{a0}}; atom.{space}.cas.b64 {{d0}}, [%own_{space}], {{a1}}, {{a2}};"
               f" ld.{space}.b64 {{d1}}, [%own_{space}];", ("small64",) * 3, ("b64", "b64"),
               lambda o, b, c: (o, c if o == b else o), seeds=(4,))


def test_atomic_f32_add_flushes_subnormals_on_global_only():
    sub = 0x00000001  # the smallest subnormal
    for space, exp in (("global", 0), ("shared", 2 * sub)):
        p_text = (f"mov.b32 %rs5, {sub:#x}; st.{space}.b32 [%own_{space}], %rs5; atom.{space}.add.f32 {{d0}}, "
                  f"[%own_{space}], %rs5; ld.{space}.b32 {{d1}}, [%own_{space}];")
        per_thread(p_text, (), ("b32", "b32"), lambda *_: (sub, exp), seeds=(1,))


def test_red_from_four_threads_per_address_leaves_an_exact_sum_and_returned_values_are_undef():
    def four(rows):
        out = []
        for g in range(0, 32, 4):
            v = (rows[g][0] + sum(r[1] for r in rows[g:g + 4])) & M32
            out += [(v,)] * 4
        return out

    _per_warp("@%lead st.shared.b32 [%four_shared], {a0}; bar.sync 0; red.shared.add.u32 [%four_shared], {a1};"
              " bar.sync 0; ld.shared.b32 {d0}, [%four_shared];", ("u32", "u32"), ("b32",), four)
    _per_warp("@%lead st.shared.b32 [%four_shared], {a0}; bar.sync 0; atom.shared.exch.b32 {d0}, [%four_shared], {a1};"
              " bar.sync 0; ld.shared.b32 {d1}, [%four_shared];", ("u32", "u32"), ("b32", "b32"),
              lambda rows: [(None, None)] * 32)


def test_local_arrays_are_per_thread_and_generic_local_addresses_work():
    per_thread("st.local.b32 [loc+4], {a0}; st.local.b32 [loc+8], {a1}; st.local.b32 [loc+12], {a0};"
               " ld.local.b32 {d0}, [loc+4]; ld.local.b64 {d1}, [loc+8];", ("u32", "u32"), ("b32", "b64"),
               lambda a, b: (a, b | (a << 32)))
    per_thread("st.local.b32 [loc+8], {a1}; ld.local.b64 {d0}, [loc+8];", ("u32", "u32"), ("b64",),
               lambda a, b: (None,))  # bytes 12-15 never written: UNDEF, not invented
    per_thread("st.local.v2.b32 [loc+16], {{{a0}, {a1}}}; ld.local.u8 {d0}, [loc+17]; ld.local.s16 {d1}, [loc+22];",
               ("u32", "u32"), ("b32", "b32"), lambda a, b: ((a >> 8) & 0xFF, s(b >> 16, 16) & M32))
    per_thread("mov.u64 %loc_a, loc; cvta.local.u64 %loc_g, %loc_a; and.b32 %loc_i, {a1}, 7; mul.wide.u32 %loc_o, %loc_i, 4;"
               " add.s64 %loc_g, %loc_g, %loc_o; st.b32 [%loc_g], {a0}; ld.local.b32 {d0}, [loc+0];"
               " st.local.b32 [loc], {a0}; add.s64 %loc_a, %loc_a, %loc_o; ld.local.b32 {d1}, [%loc_a];",
               ("u32", "u32"), ("b32", "b32"), lambda a, b: (a if b & 7 == 0 else None, a))


def test_local_out_of_bounds_is_a_one_line_bad_address():
    from fuzzptx.oracles.reference import BadAddress
    from fuzzptx.oracles.reference.coverage import Form
    from support.hw_scalar import program

    p = program(Form("t", "ld.local.b32 {d0}, [loc+64];", (), ("b32",)), 1, 32)
    with pytest.raises(BadAddress, match="local offset 0x40"):
        run_program(p)


def test_cvt_to_a_narrow_signed_type_sign_extends_into_the_register():
    per_thread("cvt.s8.s32 {d0}, {a0};", ("u32",), ("b16",), lambda a: (s(a, 8) & 0xFFFF,))
    per_thread("cvt.rzi.s8.f32 {d0}, {a0};", ("f32",), ("b16",),
               lambda a: (None if _cvt_s8(a) is None else _cvt_s8(a) & 0xFFFF,))
    per_thread("cvt.u8.s32 {d0}, {a0};", ("u32",), ("b16",), lambda a: (a & 0xFF,))


def _cvt_s8(bits: int) -> int:
    import math
    import struct as st
    v = st.unpack("<f", st.pack("<I", bits))[0]
    if math.isnan(v):
        return None  # the ISA's cvt names no integer for a NaN: left free
    return max(-128, min(127, int(v) if math.isfinite(v) else (127 if v > 0 else -128)))


# ------------------------------------------------------------------ floating point forms


def _f64(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _bits64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _directed(fr, mode: str) -> float:
    """An exact Fraction rounded to float64 toward zero / -inf / +inf (IEEE 754, overflow included)."""
    import math
    from fractions import Fraction
    big = 1.7976931348623157e308
    if abs(fr) > Fraction(big):
        pos = fr > 0
        keep_inf = (mode == "rp" and pos) or (mode == "rm" and not pos)
        return (math.inf if pos else -math.inf) if keep_inf else (big if pos else -big)
    x = float(fr)
    if Fraction(x) == fr:
        return x
    lo, hi = (x, math.nextafter(x, math.inf)) if Fraction(x) < fr else (math.nextafter(x, -math.inf), x)
    return {"rz": lo if fr > 0 else hi, "rm": lo, "rp": hi}[mode]


@pytest.mark.parametrize("mode", ["rz", "rm", "rp"])
def test_f64_add_mul_div_with_directed_rounding_are_exact(mode):
    import math
    from fractions import Fraction

    def model(op):
        def f(a, b):
            x, y = _f64(a), _f64(b)
            if not (math.isfinite(x) and math.isfinite(y)) or (op == "div" and y == 0):
                with np.errstate(all="ignore"):  # IEEE specials: exact in any rounding mode
                    v = {"add": np.add, "mul": np.multiply, "div": np.divide}[op](np.float64(x), np.float64(y))
                return (None if math.isnan(v) else _bits64(float(v)),)  # NaN payload: free (ISA names none)
            ex = {"add": Fraction(x) + Fraction(y), "mul": Fraction(x) * Fraction(y),
                  "div": Fraction(x) / Fraction(y) if y else None}[op]
            if op == "add" and ex == 0:  # IEEE 754 6.3: the sign of an exact zero sum
                neg = (math.copysign(1, x) < 0) and (math.copysign(1, y) < 0) if x == 0 == y else False
                return (_bits64(-0.0 if neg or mode == "rm" and not (x == 0 == y and math.copysign(1, x) > 0
                                                                      and math.copysign(1, y) > 0) else 0.0),)
            return (_bits64(_directed(ex, mode)),)
        return f

    for op in ("add", "mul", "div"):
        per_thread(f"{op}.{mode}.f64 {{d0}}, {{a0}}, {{a1}};", ("f64", "f64"), ("b64",), model(op), seeds=(7,))


def _f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & M32))[0]


def test_min_max_nan_and_xorsign_abs_and_relu():
    import math
    cn = 0x7FFFFFFF

    def mm(op, nan, xs):
        def f(a, b):
            x, y = _f32(a), _f32(b)
            if xs:
                x, y = abs(x), abs(y)
            if math.isnan(x) and math.isnan(y) or (nan and (math.isnan(x) or math.isnan(y))):
                return (cn,)
            if math.isnan(x):
                r = y
            elif math.isnan(y):
                r = x
            elif x == 0 and y == 0:
                neg = (math.copysign(1, x) < 0 or math.copysign(1, y) < 0) if op == "min" else \
                    (math.copysign(1, x) < 0 and math.copysign(1, y) < 0)
                r = -0.0 if neg else 0.0
            else:
                r = min(x, y) if op == "min" else max(x, y)
            bits = struct.unpack("<I", struct.pack("<f", r))[0]
            if xs:
                bits = (bits & 0x7FFFFFFF) | ((a ^ b) & 0x80000000)
            return (bits,)
        return f

    for op in ("min", "max"):
        per_thread(f"{op}.NaN.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b32",), mm(op, True, False), seeds=(8,))
        per_thread(f"{op}.xorsign.abs.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b32",), mm(op, False, True), seeds=(8,))

    def relu16(a, b, c):  # fma.rn.relu.f16: the f16 fma, negative -> +0, NaN -> 0x7fff
        x, y, z = (float(np.array([v], np.uint16).view(np.float16)[0]) for v in (a, b, c))
        from fractions import Fraction
        if any(math.isnan(v) or math.isinf(v) for v in (x, y, z)):
            return (_relu16_float(x * y + z),)
        ex = Fraction(x) * Fraction(y) + Fraction(z)
        return (_relu16_float(float(np.float16(_rn16(ex)))),)

    per_thread("fma.rn.relu.f16 {d0}, {a0}, {a1}, {a2};", ("f16",) * 3, ("b16",), relu16, seeds=(9,))


def _rn16(fr) -> float:
    """An exact Fraction rounded to nearest even f16 (via float64 then f16 is exact enough here:
    f16 products and sums of f16 values fit float64 without rounding)."""
    return float(fr)


def _relu16_float(v: float) -> int:
    import math
    if math.isnan(v):
        return 0x7FFF
    if v < 0:
        return 0
    return int(np.array([v], np.float16).view(np.uint16)[0])


def test_setp_on_packed_halves_gives_low_to_p_and_high_to_q():
    def f(a, b):
        lo = [float(np.array([v & 0xFFFF], np.uint16).view(np.float16)[0]) for v in (a, b)]
        hi = [float(np.array([v >> 16], np.uint16).view(np.float16)[0]) for v in (a, b)]
        return (int(lo[0] < lo[1]), int(hi[0] < hi[1]))

    per_thread("setp.lt.f16x2 {d0}|{d1}, {a0}, {a1};", ("f16x2", "f16x2"), ("pred", "pred"), f)


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_fma_f64_rounds_the_exact_result_once(mode):
    import math
    from fractions import Fraction

    def f(a, b, c):
        x, y, z = _f64(a), _f64(b), _f64(c)
        if not all(math.isfinite(v) for v in (x, y, z)):
            with np.errstate(all="ignore"):
                v = np.float64(x) * np.float64(y) + np.float64(z)
            return (None if math.isnan(v) else _bits64(float(v)),)  # NaN payload: free
        ex = Fraction(x) * Fraction(y) + Fraction(z)
        if ex == 0:
            return (_bits64(_zero_sign(x, y, z, mode)),)
        return (_bits64(_directed(ex, mode) if mode != "rn" else _rn(ex)),)

    per_thread(f"fma.{mode}.f64 {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("f64",) * 3, ("b64",), f, seeds=(10, 11))


def _rn(fr) -> float:
    import math
    try:
        return float(fr)
    except OverflowError:
        return math.inf if fr > 0 else -math.inf


def _zero_sign(x, y, z, mode) -> float:
    import math
    p_neg = (math.copysign(1, x) < 0) != (math.copysign(1, y) < 0)
    if x * y == 0 and z == 0 and p_neg == (math.copysign(1, z) < 0):
        return -0.0 if p_neg else 0.0
    return -0.0 if mode == "rm" else 0.0


@pytest.mark.parametrize("ct,w,signed", [("u16", 16, False), ("s16", 16, True), ("u8", 8, False), ("s8", 8, True),
                                         ("u4", 4, False), ("s4", 4, True)])
def test_cvt_pack_sat(ct, w, signed):
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)

    def f(a, b, c=0):
        ta, tb = (max(min(s(v, 32), hi), lo) & ((1 << w) - 1) for v in (a, b))
        d = tb | (ta << w)
        if w < 16:
            d |= (c << 2 * w) & M32
        return (d,)

    if w == 16:
        per_thread(f"cvt.pack.sat.{ct}.s32 {{d0}}, {{a0}}, {{a1}};", ("u32", "u32"), ("b32",), f)
    else:
        per_thread(f"cvt.pack.sat.{ct}.s32.b32 {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32",) * 3, ("b32",), f)


def test_bar_warp_sync_and_ldu():
    _per_warp("st.shared.b32 [%own_shared], {a0}; bar.warp.sync 0xffffffff; xor.b32 %rs4, %rs0, 1; mul.wide.u32 %rds5, %rs4, 8;"
              " mov.u64 %rds6, sm; add.s64 %rds6, %rds6, %rds5; ld.shared.b32 {d0}, [%rds6];", ("u32",), ("b32",),
              lambda rows: [(rows[ln ^ 1][0],) for ln in range(32)])
    per_thread("ldu.global.b32 {d0}, [%rds2]; ld.global.nc.b32 {d1}, [%rds2]; prefetchu.L1 [%rds2];", ("u32",),
               ("b32", "b32"), lambda a: (a, a))


# ------------------------------------------------------------------ the H100 record's examples
# Inputs and H100 bits from tests/hw_records/scalar_ops_h100.json (hw_scalar.py, H100, ptxas 13.0.88,
# 2026-11-28): facts measured on the GPU.  "UNDEF" where the ISA leaves the value free (the H100 bits
# are then a NaN, or the integer the H100 picks for a NaN).  One case or two per cause.
H100_CASES = [
    # div/rem.s64 with INT64_MIN: |INT64_MIN| does not fit s64
    ("div.s64", ["0x9f4a7d3a", "0x8000000000000000"], ["0x0"]),
    ("div.s64", ["0x8000000000000000", "0x370d0e3f"], ["0xfffffffdacc525c3"]),
    ("div.s64", ["0x8000000000000000", "0x7fffffffffffffff"], ["0xffffffffffffffff"]),
    ("rem.s64", ["0x8000000000000000", "0x3"], ["0xfffffffffffffffe"]),
    ("rem.s64", ["0xffffffff00000000", "0x8000000000000000"], ["0xffffffff00000000"]),
    # float -> u64 past the range clamps to 0xffffffffffffffff ("clamped to the destination range")
    ("cvt.rzi.u64.f32", ["0x6ecae785"], ["0xffffffffffffffff"]),
    ("cvt.rpi.u64.f64", ["0x43f0000000000000"], ["0xffffffffffffffff"]),
    ("cvt.rni.u64.bf16", ["0x7f7f"], ["0xffffffffffffffff"]),
    # s64/u64 -> float with a directed mode: float64(x) is 2**63 / 2**64, above x
    ("cvt.rz.f32.u64", ["0xffffffffffffffff"], ["0x5f7fffff"]),
    ("cvt.rp.f32.u64", ["0xffffffffffffffff"], ["0x5f800000"]),
    ("cvt.rm.f64.s64", ["0x7fffffffffffffff"], ["0x43dfffffffffffff"]),
    ("cvt.rz.bf16.s64", ["0x7fffffffffffffff"], ["0x5eff"]),
    # .sat and .relu give +0 for a -0 result
    ("sub.rz.ftz.sat.f32", ["0x80000001", "0x0"], ["0x0"]),
    ("mul.rz.ftz.sat.f32", ["0x0", "0xdc87ca5a"], ["0x0"]),
    ("add.rn.ftz.sat.f16", ["0x8000", "0x8000"], ["0x0"]),
    ("cvt.rn.sat.f16.f32", ["0xa3c2adec"], ["0x0"]),
    ("cvt.sat.f64.f32", ["0x80000000"], ["0x0"]),
    ("fma.rn.relu.f16", ["0x18f", "0x84dd", "0x0"], ["0x0"]),
    ("fma.rn.relu.bf16x2", ["0x3f00caf8", "0x80010001", "0x678e"], ["0x678e"]),
    # .relu after .satfinite: a negative overflow is 0, not -448
    ("cvt.rn.satfinite.relu.e4m3x2.f32", ["0x7f61b1e6", "0xd59083a4"], ["0x7e00"]),
    ("cvt.rn.satfinite.relu.e4m3x2.f32", ["0xca74adb0", "0x3f808000"], ["0x38"]),
    # IEEE 754 6.3 and 7.3 under directed f64 modes
    ("sub.rm.f64", ["0x3fe0000000000000", "0x3fe0000000000000"], ["0x8000000000000000"]),
    ("div.rz.f64", ["0xbff8000000000000", "0x0"], ["0xfff0000000000000"]),
    ("div.rp.f64", ["0x7e37e43c8800759c", "0x8000000000000000"], ["0xfff0000000000000"]),
    # "positive and negative zero are considered normal numbers" (PTX ISA, testp)
    ("testp.normal.f32", ["0x0"], ["0x1"]),
    ("testp.normal.f64", ["0x8000000000000000"], ["0x1"]),
    # NaN payloads the ISA does not fix
    ("add.rn.f64", ["0x41effffffff00000", "0x7ff0000000000001"], ["UNDEF"]),       # H100 0x7ff8000000000001
    ("mul.rn.f64", ["0xfff0000000000000", "0x0"], ["UNDEF"]),                      # H100 0xfff8000000000000
    ("sqrt.rn.f64", ["0xbfb5a912d58efa2c"], ["UNDEF"]),                            # H100 0xfff8000000000000
    ("fma.rn.f64", ["0x7ff0000000000001", "0x3f79087377d5093c", "0x41dfffffffe00000"], ["UNDEF"]),
    ("cvt.rni.f64.f64", ["0x7ff0000000000001"], ["UNDEF"]),                       # H100 0x7ff8000000000001
    ("atom.global.add.f64", ["0x4302aa17430ef3bc", "0x7ff8000000000000"], ["0x4302aa17430ef3bc", "UNDEF"]),
    ("abs.f32", ["0xffc00000"], ["UNDEF"]),                                        # H100 0x7fffffff
    ("neg.f64", ["0x7ff8000000000000"], ["UNDEF"]),                                # H100 0x7ff8000000000000
    ("neg.f16x2", ["0xfe005d29"], ["UNDEF"]),                                      # H100 0x7fffdd29
    ("cvt.f64.f16", ["0x7c01"], ["UNDEF"]),                                        # H100 0x7ff8040000000000
    ("cvt.f32.bf16", ["0x7f81"], ["UNDEF"]),                                       # H100 0x7f810000
    ("cvt.rn.f16.f64", ["0x7ff8000000000000"], ["UNDEF"]),                         # H100 0x7e00
    # float -> integer of a NaN: the H100 writes 0 or the INT_MIN pattern; the ISA names none
    ("cvt.rni.s64.f32", ["0xffc00000"], ["UNDEF"]),                                # H100 0x8000000000000000
    ("cvt.rzi.u8.f64", ["0x7ff8000000000000"], ["UNDEF"]),                         # H100 0x80
]


def _record_examples() -> dict:
    import json
    import pathlib

    rec = json.loads((pathlib.Path(__file__).parent / "hw_records" / "scalar_ops_h100.json").read_text())
    return {(r["form"], tuple(e["inputs"])): e["h100"] for r in rec["rows"] for run in r["runs"]
            for e in run.get("examples", [])}


@pytest.mark.parametrize("label,inputs,expect", H100_CASES, ids=[f"{c[0]}:{'/'.join(c[1])}" for c in H100_CASES])
def test_the_h100_records_examples_are_the_references_values(label, inputs, expect):
    from fuzzptx.oracles.reference.coverage import FORMS
    from support.hw_scalar import program_on

    h100 = _record_examples().get((label, tuple(inputs)))
    assert h100 is not None, "the example is in the H100 record"
    form = next(f for f in FORMS if f.label == label)
    r = run_program(program_on(form, [int(x, 16) for x in inputs], threads=1))
    ob = r.outputs["out"]
    bits = np.frombuffer(ob.data, np.uint64)
    for j, e in enumerate(expect):
        if e == "UNDEF":
            assert ob.kind[j] == UNDEF, (label, j, hex(int(bits[j])))
        else:
            assert e == h100[j] and ob.kind[j] != UNDEF and hex(int(bits[j])) == e, (label, j, hex(int(bits[j])), h100[j])


def test_a_nan_half_of_a_packed_pair_leaves_the_other_half_exact():
    """neg.f16x2 of 0xfe005d29 (the H100 record: 0x7fffdd29): the NaN half is free, the low half is 0xdd29."""
    p = kernel("neg.f16x2 %r30, %r1; " + store(), threads=2, inputs={"a": (32, [0xFE005D29, 0x3C00BC00])})
    r = run_program(p)
    o = r.outputs["o"]
    got = np.frombuffer(o.data, np.uint32)
    assert o.kind[0] == UNDEF and o.kind[1] != UNDEF and got[1] == 0xBC003C00
    p = kernel("neg.f16x2 %r30, %r1; mov.b32 {%h1, %h2}, %r30; cvt.u32.u16 %r30, %h1; " + store(), threads=1,
               inputs={"a": (32, [0xFE005D29])})
    o = run_program(p).outputs["o"]
    assert o.kind[0] != UNDEF and np.frombuffer(o.data, np.uint32)[0] == 0xDD29
