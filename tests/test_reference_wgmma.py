"""Reference interpreter on whole wgmma programs: every dense form, the seed's examples, the pipeline rules.

Expected results come from numpy on the buffers' values (``examples.expected``):
with small-integer data every product and sum is exact, so the reference's nominal
result must equal numpy's bit for bit and its allowed interval must contain it.
"""
from __future__ import annotations

import numpy as np
import pytest

from fuzzptx import isa
from fuzzptx.oracles.reference import compare, run_program
from support.examples import expected, wgmma_program
from fuzzptx.oracles.reference.values import SET, UNDEF
from fuzzptx.program import Program


def _signatures(ns=(8,)):
    seen, out = set(), []
    for f in isa.forms("wgmma"):
        sig = (f.atype, f.btype, f.dtype, f.a_source, f.satfinite)
        if f.shape.n in ns and sig not in seen:
            seen.add(sig)
            out.append(f.key)
    return out


def _check(p: Program, key: str, **kw):
    r = run_program(p)
    assert r.undefined is None, r.undefined
    o = r.outputs["d"]
    e = expected(p, key, **{k: v for k, v in kw.items() if k != "scale_d_pred"})
    got = o.values().astype(np.float64).reshape(64, -1)
    assert np.array_equal(got, e), f"{key}: max diff {np.abs(got - e).max()}"
    assert not (o.kind == UNDEF).any()
    s = o.kind.reshape(64, -1) == SET
    assert (o.lo.reshape(64, -1)[s] <= e[s]).all() and (o.hi.reshape(64, -1)[s] >= e[s]).all()
    return r


@pytest.mark.parametrize("key", _signatures(), ids=lambda k: k.split("aligned.")[1])
def test_every_dense_form_n8_exact_data(key):
    form = isa.by_key(key)
    init = "random" if form.atype == "b1" else "small_int"
    p = wgmma_program(key, scale_d=1, c_init="small_int", init=init)
    r = _check(p, key, scale_d=1)
    if form.dtype == "s32":
        assert (r.outputs["d"].kind == 0).all()  # integer results are exact


@pytest.mark.parametrize("key", [
    "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16|a=desc",
    "wgmma.mma_async.sync.aligned.m64n256k32.s32.u8.s8|a=reg",
    "wgmma.mma_async.sync.aligned.m64n136k8.f32.tf32.tf32|a=reg",
    "wgmma.mma_async.sync.aligned.m64n40k32.f16.e5m2.e4m3|a=desc",
    "wgmma.mma_async.sync.aligned.m64n208k256.s32.b1.b1.and.popc|a=desc",
])
def test_large_n(key):
    init = "random" if ".b1." in key else "small_int"
    _check(wgmma_program(key, init=init), key)


@pytest.mark.parametrize("sat", [False, True])
def test_integer_satfinite_clamps_and_plain_wraps(sat):
    key = f"wgmma.mma_async.sync.aligned.m64n16k32{'.satfinite' if sat else ''}.s32.s8.s8|a=reg"
    p = wgmma_program(key, scale_d=1, c_init="special", init="random")
    r = run_program(p)
    exact = expected(p, key, scale_d=1).astype(np.int64)
    assert (np.abs(exact) > 2**31 - 1).any(), "test data must overflow somewhere"
    want = np.clip(exact, -2**31, 2**31 - 1) if sat else (exact + 2**31) % 2**32 - 2**31
    assert np.array_equal(r.outputs["d"].values().reshape(64, 16), want)



@pytest.mark.parametrize("atype,btype", [("u8", "u8"), ("s8", "s8"), ("s8", "u8")])
def test_integer_products_are_exact_at_the_extremes(atype, btype):
    """Integer dot products go through float64 BLAS where that is exact: check against Python
    ints with every element at its largest magnitude (K = 32, N = 256: the biggest sums)."""
    from fuzzptx.oracles.reference import formats as F
    from fuzzptx.oracles.reference.wgmma_math import wgmma_dense

    form = isa.by_key(f"wgmma.mma_async.sync.aligned.m64n256k32.s32.{atype}.{btype}|a=reg")
    big = {"u8": 255, "s8": 0x80}  # 255 and -128
    a = np.full((64, 32), big[atype], np.uint32)
    b = np.full((32, 256), big[btype], np.uint32)
    b[:, ::2] = 1  # mixed columns
    c = np.full((64, 256), 0x7FFFFF00, np.uint32)
    got = wgmma_dense(form, a, b, c).bits
    av, bv = F.decode(atype, a).astype(object), F.decode(btype, b).astype(object)
    exact = av.dot(bv) + F.decode("s32", c).astype(object)
    want = np.array([[int(x) % 2**32 for x in row] for row in exact], dtype=np.int64)  # the s32 wrap, as bits
    assert np.array_equal(got.astype(np.int64), want)


# The examples of seed 000 (9.7.15.5.2), each wrapped into a whole program.
SEED_EXAMPLES = [
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16|a=reg", dict(scale_d=1, imm_scale_a=-1, imm_scale_b=-1, trans_b=1)),
    ("wgmma.mma_async.sync.aligned.m64n72k16.f16.f16.f16|a=desc", dict(scale_d=1, scale_d_pred=True, imm_scale_a=-1, trans_a=1)),
    ("wgmma.mma_async.sync.aligned.m64n120k16.f32.bf16.bf16|a=reg", dict(scale_d=1, scale_d_pred=True, imm_scale_a=-1, imm_scale_b=-1)),
    ("wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32|a=desc", dict(scale_d=0, imm_scale_a=-1, imm_scale_b=-1)),
    ("wgmma.mma_async.sync.aligned.m64n8k32.f16.e4m3.e5m2|a=desc", dict(scale_d=1, scale_d_pred=True, imm_scale_a=-1)),
    ("wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e4m3|a=reg", dict(scale_d=1, imm_scale_a=-1, imm_scale_b=-1)),
    ("wgmma.mma_async.sync.aligned.m64n8k32.satfinite.s32.s8.s8|a=reg", dict(scale_d=1)),
    ("wgmma.mma_async.sync.aligned.m64n8k32.s32.u8.u8|a=desc", dict(scale_d=1, scale_d_pred=True)),
    ("wgmma.mma_async.sync.aligned.m64n8k32.satfinite.s32.s8.u8|a=reg", dict(scale_d=1, scale_d_pred=True)),
    ("wgmma.mma_async.sync.aligned.m64n8k32.s32.u8.s8|a=desc", dict(scale_d=1, scale_d_pred=True)),
    ("wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc|a=reg", dict(scale_d=1, scale_d_pred=True)),
]


@pytest.mark.parametrize("key,kw", SEED_EXAMPLES, ids=[k.split("aligned.")[1] for k, _ in SEED_EXAMPLES])
def test_seed_000_examples(key, kw):
    init = "random" if ".b1." in key else "small_int"
    c = "small_int" if kw.get("scale_d") else None
    p = wgmma_program(key, c_init=c, init=init, **kw)
    _check(p, key, **kw)


def test_random_data_intervals_accept_other_summation_orders_and_reject_wrong_values():
    key = "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16|a=reg"
    p = wgmma_program(key, init="random", seed=5)
    r = run_program(p)
    e = expected(p, key)
    # a different but legal evaluation: float32 accumulation in reverse k order, truncated at each step
    a = e * 0
    from fuzzptx.data import buffer_bytes
    import ml_dtypes
    av = buffer_bytes(p.buffer("a")).view(ml_dtypes.bfloat16).astype(np.float32).reshape(64, 16)
    bv = buffer_bytes(p.buffer("b")).view(ml_dtypes.bfloat16).astype(np.float32).reshape(32, 16)
    acc = np.zeros((64, 32), np.float32)
    for k in reversed(range(16)):
        acc = (acc + av[:, k:k + 1] * bv[:, k][None, :]).astype(np.float32)
    assert compare(p, r, {"d": acc.tobytes()}) == []
    wrong = acc.copy()
    wrong[3, 4] = wrong[3, 4] * 1.01 + 1
    m = compare(p, r, {"d": wrong.tobytes()})
    assert [(x.buffer, x.index) for x in m] == [("d", 3 * 32 + 4)]
    del a


def _edit(p: Program, old: str, new: str, count: int = 1) -> Program:
    text = p.to_ptx()
    assert old in text
    return Program.from_ptx(text.replace(old, new, count), "<edited>")


KEY = "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16|a=reg"


def test_missing_wgmma_fence_is_undefined():
    p = _edit(wgmma_program(KEY), "wgmma.fence.sync.aligned;", "")
    r = run_program(p)
    assert (r.outputs["d"].kind == UNDEF).all() and any("wgmma.fence" in n for n in r.notes)


def test_reading_accumulators_before_wait_is_undefined():
    p = _edit(wgmma_program(KEY), "wgmma.wait_group.sync.aligned 0;", "")
    assert (run_program(p).outputs["d"].kind == UNDEF).all()
    # waiting after the stores is too late as well
    p = _edit(wgmma_program(KEY), "wgmma.wait_group.sync.aligned 0;", "")
    p = _edit(p, "\tret;", "\twgmma.wait_group.sync.aligned 0;\n\tret;")
    assert (run_program(p).outputs["d"].kind == UNDEF).all()


def test_missing_proxy_fence_makes_smem_operands_undefined():
    p = _edit(wgmma_program(KEY), "fence.proxy.async.shared::cta;", "")
    r = run_program(p)
    assert (r.outputs["d"].kind == UNDEF).all() and any("fence.proxy.async" in n for n in r.notes)


def test_chained_wgmmas_in_flight_accumulate():
    """Two wgmmas into the same accumulators before one wait: D = 2 A B (the spec orders same-shape chains)."""
    p = wgmma_program(KEY)
    text = p.to_ptx()
    line = next(ln for ln in text.splitlines() if "wgmma.mma_async" in ln)
    p2 = Program.from_ptx(text.replace(line, line + "\n" + line.replace(", 0, 1, 1, 0;", ", 1, 1, 1, 0;")), "<x>")
    r = run_program(p2)
    e = 2 * expected(p, KEY)
    o = r.outputs["d"]
    assert (o.kind == SET).all()
    assert (o.lo.reshape(64, 16) <= e).all() and (o.hi.reshape(64, 16) >= e).all()
    v = o.values().astype(np.float64)
    assert ((o.lo <= v) & (v <= o.hi)).all()  # the nominal bits are a member of the set


def test_second_wgmma_after_wait_widens_for_an_inexact_accumulator():
    """C itself a set (the first wgmma's spec interval): the second result's set must contain every outcome."""
    p = wgmma_program(KEY, init="random")
    text = p.to_ptx()
    line = next(ln for ln in text.splitlines() if "wgmma.mma_async" in ln)
    second = ("\twgmma.fence.sync.aligned;\n" + line.replace(", 0, 1, 1, 0;", ", 1, 1, 1, 0;") +
              "\n\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;")
    p2 = Program.from_ptx(text.replace("wgmma.wait_group.sync.aligned 0;", "wgmma.wait_group.sync.aligned 0;\n" + second, 1), "<x>")
    r = run_program(p2)
    e = 2 * expected(p, KEY)
    o = r.outputs["d"]
    assert (o.kind == SET).all()
    first = run_program(p).outputs["d"]
    width1 = (first.hi - first.lo).reshape(64, 16)
    width2 = (o.hi - o.lo).reshape(64, 16)
    assert (o.lo.reshape(64, 16) <= e).all() and (o.hi.reshape(64, 16) >= e).all()
    assert (width2 >= width1).all()


def test_two_warpgroups_each_run_their_own_wgmma():
    p = wgmma_program(KEY)
    text = p.to_ptx().replace("block=128,1,1", "block=256,1,1")
    text = text.replace("mov.u32 %ti, %tid.x;", "mov.u32 %ti, %tid.x;\n\tand.b32 %ti, %ti, 127;")
    r = run_program(Program.from_ptx(text, "<2wg>"))
    assert r.undefined is None and not (r.outputs["d"].kind == UNDEF).any()
    assert np.array_equal(r.outputs["d"].values().reshape(64, 16), expected(p, KEY))


def test_wgmma_in_partial_warpgroup_is_undefined():
    p = wgmma_program(KEY)
    text = p.to_ptx()
    line = next(ln for ln in text.splitlines() if "wgmma.mma_async" in ln)
    text = text.replace(line, "\tsetp.lt.u32 %pc, %ti, 64;\n\t@%pc " + line.strip())
    r = run_program(Program.from_ptx(text, "<partial>"))
    assert (r.outputs["d"].kind == UNDEF).all()


def test_sign_bit_xor_on_an_accumulator_keeps_its_set():
    """xor with the sign bit negates the value set instead of giving up (metamorphic sign flips)."""
    p = wgmma_program(KEY, init="random")
    p2 = _edit(p, "wgmma.wait_group.sync.aligned 0;", "wgmma.wait_group.sync.aligned 0;\n\txor.b32 %d0, %d0, 0x80000000;")
    o1, o2 = run_program(p).outputs["d"], run_program(p2).outputs["d"]
    assert (o2.kind == SET).all()
    flipped = o1.values() != o2.values()
    assert flipped.sum() == 128  # element 0 of each thread
    assert np.array_equal(o2.lo[flipped], -o1.hi[flipped]) and np.array_equal(o2.hi[flipped], -o1.lo[flipped])


def test_branch_on_a_compare_of_a_value_set_is_defined_when_every_member_agrees():
    p = wgmma_program(KEY, init="random")
    extra = ("wgmma.wait_group.sync.aligned 0;\n\tsetp.gt.f32 %pc, %d0, 0f7F000000;\n\t@%pc bra HUGE;\n"
             "\tsetp.lt.f32 %ps, %d1, 0f00000000;\n\tselp.f32 %d1, 0f3F800000, 0f40000000, %ps;\nHUGE:")
    r = run_program(_edit(p, "wgmma.wait_group.sync.aligned 0;", extra))
    assert r.undefined is None  # no element is near 2^127: the branch is decided for every thread
    o = r.outputs["d"]
    rows = np.array([16 * w + g for w in range(4) for g in range(8)])  # %d1 of lane quad q=0 is column 1
    got = o.values().reshape(64, 16)[rows, 1]
    kind = o.kind.reshape(64, 16)[rows, 1]
    want = np.where(expected(p, KEY)[rows, 1] < 0, 1.0, 2.0)
    decided = kind == 0
    assert decided.sum() >= len(rows) - 2  # only a sum within its error bound of 0 stays undecided
    assert np.array_equal(got[decided], want[decided])
    assert (kind[~decided] == UNDEF).all()


GPU_KEYS = [
    ("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16|a=reg", {}),
    ("wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16|a=desc", {"trans_b": 1}),
    ("wgmma.mma_async.sync.aligned.m64n24k8.f32.tf32.tf32|a=reg", {}),
    ("wgmma.mma_async.sync.aligned.m64n16k32.f16.e4m3.e5m2|a=desc", {}),
    ("wgmma.mma_async.sync.aligned.m64n32k32.satfinite.s32.s8.u8|a=reg", {}),
    ("wgmma.mma_async.sync.aligned.m64n16k256.s32.b1.b1.and.popc|a=desc", {}),
]


@pytest.mark.gpu
@pytest.mark.parametrize("key,kw", GPU_KEYS, ids=[k.split("aligned.")[1] for k, _ in GPU_KEYS])
def test_reference_bounds_hold_on_the_gpu(key, kw):
    """The hardware's D lies inside the reference's sets (random data: rounding really happens)."""
    from fuzzptx.oracles.hardware import run_program_on_gpu

    p = wgmma_program(key, init="random", **kw)
    hw = run_program_on_gpu(p)
    assert hw.fault is None, hw.fault
    assert compare(p, run_program(p), hw.outputs) == []


def test_example_programs_are_accepted_by_ptxas_without_diagnostics():
    """The programs these tests judge are real PTX: ptxas takes them as they are (no C75xx either)."""
    from fuzzptx.oracles.ptxas import compile_batch

    progs = [wgmma_program(k, c_init="small_int" if kw.get("scale_d") else None, **kw) for k, kw in SEED_EXAMPLES]
    progs += [wgmma_program(k, init="random", **kw) for k, kw in GPU_KEYS]
    res = compile_batch([p.to_ptx() for p in progs])
    assert all(r.accepted for r in res), [r.diagnostics[:1] for r in res if not r.accepted]
    assert not any(r.codes() for r in res)


def _special_record_cases():
    import json
    import pathlib

    # the mismatches of the record as it stood before the fix (the re-run record has none)
    path = pathlib.Path(__file__).parent / "data" / "dense_wgmma_special_chained_2026-11-22.json"
    return json.loads(path.read_text())["cases"]


def test_chained_wgmma_spec_sets_contain_the_h100_results_of_the_special_values_record():
    """Regression: 35 chained (k_steps=2) special-value cases where the H100 stored a finite D
    and spec mode allowed "no finite value" (a first result's -Inf interval end read as C = -Inf).

    The hardware mode reproduces the H100 bit for bit on dense wgmma (tests/hw_records), so
    its result stands in for the recorded bytes.
    """
    from fuzzptx.builders import wgmma_program as build

    cases = _special_record_cases()
    assert len(cases) == 35
    for case in cases:
        kw = dict(case)
        p = build(kw.pop("form"), **kw)
        hw = run_program(p, mode="hardware")
        spec = run_program(p)
        assert hw.undefined is None and spec.undefined is None
        bad = compare(p, spec, {"d": hw.bytes("d")})
        assert not bad, f"{case}: {bad[0]}"


def _with_c_from(code: str) -> Program:
    """KEY's program with scale-d on and every accumulator set first: d1..d7 exact, d0 by ``code``."""
    text = wgmma_program(KEY, init="random").to_ptx()
    pre = "".join(f"\tmov.f32 %d{i}, 0f3F800800;\n" for i in range(8)) + code
    text = text.replace("\twgmma.fence.sync.aligned;", pre + "\twgmma.fence.sync.aligned;", 1)
    return Program.from_ptx(text.replace(", 0, 1, 1, 0;", ", 1, 1, 1, 0;"), "<x>")


def test_hardware_mode_with_a_set_accumulator_widens_only_those_elements_and_says_so():
    """C = x*x - 1 with a plain mul/add: fused (fma) or not, a set even in hardware mode.

    Its D elements get the spec-mode widening (containing both hardware outcomes), with a
    note; every other element keeps the H100's one exact result.
    """
    x = "0f3F800800"  # 1 + 2^-12: x*x - 1 differs fused (2^-11 + 2^-24) and unfused (2^-11)
    p = _with_c_from(f"\tmul.f32 %d0, %d0, {x};\n\tadd.f32 %d0, %d0, 0fBF800000;\n")
    r = run_program(p, mode="hardware")
    assert r.undefined is None
    assert any("hardware mode" in n and "value set" in n for n in r.notes)
    o = r.outputs["d"]
    fused = run_program(_with_c_from(f"\tfma.rn.f32 %d0, %d0, {x}, 0fBF800000;\n"), mode="hardware")
    split = run_program(_with_c_from(f"\tmul.rn.f32 %d0, %d0, {x};\n\tadd.rn.f32 %d0, %d0, 0fBF800000;\n"),
                        mode="hardware")
    for q in (fused, split):
        assert (q.outputs["d"].kind == 0).all()
        assert not compare(p, r, {"d": q.bytes("d")})  # the set holds both outcomes
    s = o.kind == SET
    assert 0 < s.sum() < s.size and not (o.kind == UNDEF).any()
    same = fused.outputs["d"].values() == split.outputs["d"].values()
    assert same[~s].all()  # elements with an exact C: the one H100 result, whatever d0 did
    assert np.array_equal(o.values()[~s], fused.outputs["d"].values()[~s])


def test_hardware_mode_reproduces_recorded_h100_bytes_through_the_interpreter():
    """Dense wgmma hardware mode, end to end: the interpreter's bytes equal the H100's, bit for bit.

    tests/hw_records/dense_wgmma_outputs.npz: raw D of 96 H100 runs (A in registers and by
    descriptor, 1, 2 and 4 chained wgmma), each rebuilt from its recorded builder arguments.
    """
    import json
    import pathlib

    from fuzzptx.builders import wgmma_program as build

    z = np.load(pathlib.Path(__file__).parent / "hw_records" / "dense_wgmma_outputs.npz")
    meta = json.loads(bytes(z["cases_json"]).decode())
    assert len(meta) >= 90 and {m["k_steps"] for m in meta.values()} >= {1, 2, 4}
    for key, case in meta.items():
        kw = dict(case)
        p = build(kw.pop("form"), **kw)
        r = run_program(p, mode="hardware")
        assert r.undefined is None and (r.outputs["d"].kind == 0).all(), case
        assert r.bytes("d") == z[key].tobytes(), case


def test_hardware_mode_is_exact_on_every_accumulator_path():
    """Chained in flight (pending tile), chained after a wait (registers), two warpgroups:
    hardware mode gives exact bits, the same along both chaining paths, and no note."""
    text = wgmma_program(KEY, init="random").to_ptx()
    line = next(ln for ln in text.splitlines() if "wgmma.mma_async" in ln)
    second = line.replace(", 0, 1, 1, 0;", ", 1, 1, 1, 0;")
    inflight = Program.from_ptx(text.replace(line, line + "\n" + second), "<x>")
    waited = Program.from_ptx(text.replace(
        "wgmma.wait_group.sync.aligned 0;", "wgmma.wait_group.sync.aligned 0;\n\twgmma.fence.sync.aligned;\n" + second +
        "\n\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;", 1), "<x>")
    two = Program.from_ptx(text.replace("block=128,1,1", "block=256,1,1").replace(
        "mov.u32 %ti, %tid.x;", "mov.u32 %ti, %tid.x;\n\tand.b32 %ti, %ti, 127;"), "<2wg>")
    runs = [run_program(q, mode="hardware") for q in (inflight, waited, two)]
    for r in runs:
        assert r.undefined is None and (r.outputs["d"].kind == 0).all() and not r.notes
    assert runs[0].bytes("d") == runs[1].bytes("d")
    one = run_program(wgmma_program(KEY, init="random"), mode="hardware")
    assert runs[2].bytes("d") == one.bytes("d")
    spec = run_program(inflight)
    assert not compare(inflight, spec, {"d": runs[0].bytes("d")})  # and inside the spec's set


@pytest.mark.parametrize("imm", [0, 2])
def test_an_imm_scale_the_isa_forbids_is_outside_the_reference_not_a_crash(imm):
    """ptxas rejects imm-scale-a/b other than -1 and 1; the reference says it cannot run such a
    program (Unsupported, at the instruction's line) instead of failing inside its arithmetic."""
    from fuzzptx.oracles.reference import Unsupported

    key = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16|a=reg"
    p = wgmma_program(key, scale_d=1, imm_scale_a=imm)
    with pytest.raises(Unsupported, match="imm-scale-a/b"):
        run_program(p)


_PARTIAL = """// fuzzptx-repro v1
// LAUNCH: kernel=k grid=1,1,1 block={block},1,1
.version 8.0
.target sm_90a
.address_size 64

.shared .align 1024 .b8 smem[16384];
.visible .entry k()
{{
	.reg .b32 %r<8>;
	.reg .b64 %rd<2>;
	mov.b64 %rd1, 0;
	wgmma.fence.sync.aligned;
	{wgmma}
	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 0;
	ret;
}}
"""
_DENSE = "wgmma.mma_async.sync.aligned.m64n8k32.s32.u8.s8 {%r0, %r1, %r2, %r3}, {%r4, %r5, %r6, %r7}, %rd1, 0;"
_SPARSE = "wgmma.mma_async.sp.sync.aligned.m64n8k64.s32.u8.s8 {%r0, %r1, %r2, %r3}, {%r4, %r5, %r6, %r7}, %rd1, %r4, 0, 0;"


@pytest.mark.parametrize("wgmma", [_DENSE, _SPARSE], ids=["dense", "sparse"])
@pytest.mark.parametrize("block,threads", [(32, 32), (160, 32)])
def test_wgmma_in_a_block_without_its_whole_warpgroup_is_undefined_not_a_crash(wgmma, block, threads):
    """A block of 32 (or the second warpgroup of a block of 160) cannot hold a warpgroup: the
    reference said so by crashing on the missing threads' registers (a shrunk campaign repro)."""
    r = run_program(Program.from_ptx(_PARTIAL.format(block=block, wgmma=wgmma)))
    assert r.undefined is not None and f"in a warpgroup of {threads} threads" in r.undefined
