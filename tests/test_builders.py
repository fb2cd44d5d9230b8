"""KernelBuilder and wgmma_program: deterministic programs that real ptxas accepts."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from fuzzptx import isa
from fuzzptx.builders import SWIZZLE_MODES, KernelBuilder, tile_plan, wgmma_program, wgmma_variants
from fuzzptx.isa import ELEMENT_BITS
from fuzzptx.oracles.reference.layouts import read_tile, tile_coords
from fuzzptx.ptx.ir import RegDecl, VarDecl


def _mixes():
    """One representative form per (type mix, A source): the smallest N."""
    seen = {}
    for f in isa.forms("wgmma"):
        key = (f.atype, f.btype, f.dtype, f.satfinite, f.a_source)
        if key not in seen or f.shape.n < seen[key].shape.n:
            seen[key] = f
    return list(seen.values())


def test_builder_is_deterministic_and_declares_registers_per_type():
    def make():
        kb = KernelBuilder("t", threads=128)
        src = kb.buffer("src", "f32", 256, seed=3)
        dst = kb.buffer("dst", "f32", 256, output=True, init="zeros")
        regs = kb.load_fragment(src, ".f32", 2)
        kb.store_fragment(dst, regs, ".f32")
        return kb.build()

    p1, p2 = make(), make()
    assert p1.to_ptx() == p2.to_ptx()
    body = p1.module.function("t").body
    decls = [s for s in body if isinstance(s, RegDecl)]
    assert len({d.type for d in decls}) == len(decls)  # one declaration per type
    declared = {n for d in decls for n in d.expand()}
    used = {str(op) for ins in p1.module.function("t").instructions() for op in ins.operands
            if str(op).startswith("%") and not str(op).startswith("%tid")}
    assert used <= declared
    assert [b.name for b in p1.buffers] == ["src", "dst"]
    assert p1.outputs()[0].name == "dst"
    assert [p.name for p in p1.module.function("t").params] == ["src", "dst"]


def test_copy_to_shared_tail_is_guarded_and_fenced():
    kb = KernelBuilder()
    src = kb.buffer("s", "b32", 130)
    sym = kb.shared(520)
    kb.copy_to_shared(src, sym, 520)
    prog = kb.build()
    ins = prog.module.function("k").instructions()
    ops = [i.opcode for i in ins]
    guarded = [i for i in ins if i.guard is not None]
    assert {i.opcode for i in guarded} == {"ld.global.b32", "st.shared.b32"}
    assert ops.index("fence.proxy.async.shared::cta") < ops.index("bar.sync")
    assert any(isinstance(s, VarDecl) and s.name == sym and s.dims == (520,) for s in prog.module.function("k").body)


# MN-major exists for 16-bit types only: the cases are the pairs that exist, none skipped
@pytest.mark.parametrize(("bits", "major"), [(32, "K"), (16, "K"), (8, "K"), (1, "K"), (16, "MN")])
@pytest.mark.parametrize("swizzle", SWIZZLE_MODES)
def test_tile_plan_steps_are_disjoint_and_inside(bits, major, swizzle):
    k = 256 // bits  # K of one instruction: 32 bytes of each row
    for mn, steps in ((8, 1), (64, 2), (24, 4), (256, 2)):
        plan = tile_plan(mn, bits, steps, major, swizzle)
        assert plan.nbytes % 16 == 0
        seen = set()
        for lay in plan.layouts:
            a = lay.address(*tile_coords(mn, k))
            b = lay.bit_in_byte(*tile_coords(mn, k))
            assert a.min() >= 0 and a.max() < plan.nbytes
            cells = set((a * 8 + b).ravel().tolist())
            assert len(cells) == mn * k  # one distinct bit/byte slot per element
            assert not (cells & seen)  # k-steps never overlap
            seen |= cells


def test_variants_follow_the_catalogue():
    f8 = next(f for f in isa.forms("wgmma") if f.atype == "e4m3" and f.a_source == "desc")
    assert wgmma_variants(f8)["b_major"] == ("K",)
    with pytest.raises(ValueError):
        wgmma_program(f8, b_major="MN")
    s8 = next(f for f in isa.forms("wgmma") if f.atype == "s8" and f.a_source == "reg")
    assert wgmma_variants(s8)["scale_a"] == (1,)
    assert wgmma_variants(s8)["a_swizzle"] == ("none",)
    h = next(f for f in isa.forms("wgmma") if f.atype == "f16" and f.a_source == "desc")
    assert wgmma_variants(h)["a_major"] == ("K", "MN")


def test_wgmma_program_buffers_match_layout_and_fragment_sizes():
    f = next(f for f in isa.forms("wgmma") if f.atype == "bf16" and f.shape.n == 24 and f.a_source == "desc")
    p = wgmma_program(f, a_swizzle="64B", b_swizzle="128B", b_major="MN", k_steps=2)
    sizes = {b.name: b.nbytes for b in p.buffers}
    assert sizes["a"] == tile_plan(64, 16, 2, "K", "64B").nbytes
    assert sizes["b"] == tile_plan(24, 16, 2, "MN", "128B").nbytes
    assert sizes["c"] == sizes["d"] == 128 * (24 // 2) * 4
    wg = [i for i in p.module.function("k").instructions() if i.opcode == f.opcode]
    assert len(wg) == 2 and str(wg[0].operands[-1]) == "1"  # imm-trans-b = 1 for MN-major B
    assert isa.form_for(wg[0]) == f


def test_shared_images_decode_to_random_nonzero_tiles():
    f = next(f for f in isa.forms("wgmma") if f.atype == "e5m2" and f.a_source == "desc" and f.shape.n == 64)
    p = wgmma_program(f, a_swizzle="128B", b_swizzle="32B", init="random", seed=5)
    from fuzzptx.data import buffer_bytes

    plan = tile_plan(64, ELEMENT_BITS["e5m2"], 1, "K", "128B")
    tile = read_tile(buffer_bytes(p.buffer("a")), plan.layouts[0], 64, 32)
    assert np.count_nonzero(tile) > tile.size * 0.9


def test_sample_of_forms_compiles_with_real_ptxas():
    """Every type mix x both A sources x every swizzle (A and B), plus MN-major and pred scale-d."""
    from fuzzptx.oracles.ptxas import compile_batch

    progs = []
    for i, f in enumerate(_mixes()):
        v = wgmma_variants(f)
        for j, sw in enumerate(SWIZZLE_MODES):
            kw = dict(b_swizzle=sw, b_major=v["b_major"][j % len(v["b_major"])],
                      scale_d=v["scale_d"][j % 3], scale_a=v["scale_a"][j % len(v["scale_a"])],
                      k_steps=1 + j % 2)
            if f.a_source == "desc":
                kw.update(a_swizzle=SWIZZLE_MODES[(j + 1) % 4], a_major=v["a_major"][(j + 1) % len(v["a_major"])])
            progs.append(wgmma_program(f, name=f"k{i}_{j}", **kw))
    results = compile_batch([p.to_ptx() for p in progs], want_cubin=False)
    bad = [(p.notes, [str(d) for d in r.diagnostics]) for p, r in zip(progs, results)
           if not r.accepted or r.diagnostics]
    assert not bad, bad[:3]
    assert len(progs) == len(_mixes()) * 4


def test_program_round_trips_through_the_parser():
    parse = pytest.importorskip("fuzzptx.ptx.parse")
    from fuzzptx.program import Program

    f = next(f for f in isa.forms("wgmma") if f.atype == "tf32" and f.a_source == "reg")
    p = wgmma_program(f, b_swizzle="64B", scale_d="pred", pred_value=True)
    q = Program.from_ptx(p.to_ptx())
    assert q.to_ptx() == p.to_ptx()
    assert q.scalars == (("sd", 1),)
    del parse


def test_numerics_line_round_trips_and_a_bad_one_names_its_line():
    from dataclasses import replace

    from fuzzptx.program import Program, ReproError

    f = next(f for f in isa.forms("wgmma") if f.atype == "f16" and f.a_source == "reg")
    p = wgmma_program(f)
    assert "NUMERICS" not in p.to_ptx() and Program.from_ptx(p.to_ptx()).numerics == "spec"
    text = replace(p, numerics="hardware").to_ptx()
    assert "// NUMERICS: hardware\n" in text
    q = Program.from_ptx(text)
    assert q.numerics == "hardware" and q.to_ptx() == text
    bad = text.replace("NUMERICS: hardware", "NUMERICS: exact")
    line = bad.splitlines().index("// NUMERICS: exact") + 1
    with pytest.raises(ReproError) as exc:
        Program.from_ptx(bad, "k.ptx")
    assert "k.ptx" in str(exc.value) and f":{line}" in str(exc.value) and "spec, hardware" in str(exc.value)


@pytest.mark.parametrize("edit,says", [
    (lambda t: t.replace("count=128 init=special", "count=999999999999 init=special"), "over the limit of 1,073,741,824"),
    (lambda t: t.replace("// LAUNCH:", "// LAUNCH: kernel=k grid=1,1,1 block=128,1,1\n// LAUNCH:"), "LAUNCH given twice"),
    (lambda t: t.replace("// BUFFER: y", "// BUFFER: x"), "a BUFFER or PARAM named x given twice"),
    (lambda t: t.replace("fuzzptx-repro v1", "fuzzptx-repro v2"), "this fuzzptx reads 'fuzzptx-repro v1'"),
    (lambda t: re.sub(r"// SIGNATURE: .*", "// SIGNATURE: ", t), "SIGNATURE needs a finding signature"),
])
def test_a_header_that_says_a_thing_twice_or_beyond_reason_names_its_line(edit, says):
    """A 1e12-element BUFFER was a MemoryError inside the reference (reported as a crash of the
    reference, a finding); a second LAUNCH or BUFFER line silently replaced or shadowed the first;
    an unknown header version was read as v1.  Each is one located line now."""
    from fuzzptx.program import Program, ReproError

    path = Path(__file__).resolve().parent.parent / "reports" / "findings" / "ptxas_O3_abs_s32_cvt_sat_s16.ptx"
    text = edit(path.read_text())
    with pytest.raises(ReproError, match=re.escape(says)) as exc:
        Program.from_ptx(text, "h.ptx")
    assert exc.value.file == "h.ptx" and exc.value.line is not None
