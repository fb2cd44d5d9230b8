"""Reference interpreter: the scalar instructions of issue 37 (bit fields, shuffles, votes, carry chains,
packed 16-bit, video, conversions, .local, atomics, special registers).

Expected values are computed here from the PTX ISA's pseudocode one bit / one lane at a time in
plain Python integers, independently of the vectorised numpy code under test.
"""
from __future__ import annotations

import random

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
