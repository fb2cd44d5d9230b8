"""Invariants of the ISA catalogue (no ptxas here: tests/test_conformance.py runs it)."""
from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from fuzzptx import isa
from fuzzptx.isa import listing, warp, wgmma
from fuzzptx.isa.model import ELEMENT_BITS
from fuzzptx.kernels import TARGET_MIN_PTX, build_target, minimal_kernel
from fuzzptx.ptx.emit import emit
from fuzzptx.ptx.ir import Instr

from seeds_dir import seeds_dir

SEEDS = seeds_dir()
FAMILIES = {"wgmma", "wgmma.sp", "wgmma.fence", "wgmma.commit_group", "wgmma.wait_group", "mma", "mma.sp",
            "wmma.load", "wmma.store", "wmma.mma", "ldmatrix", "stmatrix"}
BITS = {**ELEMENT_BITS, "e3m2": 8, "e2m3": 8, "e2m1": 8}  # f6/f4 sit in byte containers


def _count(form, role):
    return form.operand(role).count


def _reg_bits(form, role):
    return 64 if form.operand(role).reg_types[0] in (".f64", ".b64") else 32


def test_keys_and_opcodes_unique():
    keys = [f.key for f in isa.forms()]
    assert len(keys) == len(set(keys))
    ops = Counter(f.opcode for f in isa.forms() if not f.family.startswith("wgmma"))
    assert not [o for o, n in ops.items() if n > 1]


def test_every_family_present():
    assert FAMILIES <= set(isa.families())
    for fam in FAMILIES:
        assert isa.forms(fam), fam


@pytest.mark.parametrize("family", ["mma", "mma.sp"])
def test_mma_fragments_hold_the_matrices(family):
    """32 lanes x registers x bits equal the matrix sizes (A is half-K when sparse); the
    Volta m8n8k4 f16 shape holds four copies (quad-pairs)."""
    for f in isa.forms(family):
        s = f.shape
        rep = 4 if (s.m, s.n, s.k) == (8, 8, 4) and f.atype == "f16" else 1
        k_a = s.k // 2 if family == "mma.sp" else s.k
        assert _count(f, "a") * _reg_bits(f, "a") * 32 == rep * s.m * k_a * BITS[f.atype], f.key
        assert _count(f, "b") * _reg_bits(f, "b") * 32 == rep * s.k * s.n * BITS[f.btype], f.key
        assert _count(f, "d") * _reg_bits(f, "d") * 32 == rep * s.m * s.n * BITS[f.dtype], f.key
        assert _count(f, "c") * _reg_bits(f, "c") * 32 == rep * s.m * s.n * BITS[f.ctype], f.key


@pytest.mark.parametrize("family", ["wgmma", "wgmma.sp"])
def test_wgmma_fragments_hold_the_matrices(family):
    for f in isa.forms(family):
        s = f.shape
        assert _count(f, "d") * 32 * 128 == s.m * s.n * BITS[f.dtype], f.key
        if f.a_source == "reg":
            k_a = s.k // 2 if family == "wgmma.sp" else s.k
            assert _count(f, "a") * 32 * 128 == s.m * k_a * BITS[f.atype], f.key
        assert s.n in wgmma.row_for(f.atype, f.btype).ns


def test_matrix_moves_hold_their_matrices():
    """ldmatrix/stmatrix: registers x 32 lanes x 32 bits = matrices x bytes per matrix."""
    for f in isa.forms("ldmatrix") + isa.forms("stmatrix"):
        m, n = map(int, re.fullmatch(r"m(\d+)n(\d+)", f.attr("shape")).groups())
        elem_bits = 16 if f.atype == "b16" else 8
        regs = f.operand("r").count
        assert regs * 32 * 32 == f.attr("num") * m * n * elem_bits, f.key


def test_minimums_are_known_targets():
    for f in isa.forms():
        assert f.target in TARGET_MIN_PTX, f.key
        assert f.min_ptx >= (6, 0), f.key


def test_sparse_selectors_are_the_defined_ones():
    for f in isa.forms("mma.sp") + isa.forms("wgmma.sp"):
        assert f.operand("sp_sel").values == tuple(f.attr("sp_sel_defined")), f.key
        assert set(f.operand("sp_sel").values) <= {0, 1, 2, 3}


def test_every_spec_exception_applies():
    spec = warp.spec_forms()
    for exc, pred, _ in warp.SPEC_EXCEPTIONS:
        assert any(pred(f) for f in spec), exc.rule
    rejected = [f for f in isa.forms() if not f.ptxas_accepts]
    assert rejected and all(f.ptxas_note for f in rejected)


def _seed(name: str) -> str:
    hits = sorted(SEEDS.glob(f"{name}_*.txt"))
    if not hits:
        pytest.skip(f"seed {name} not found under {SEEDS} (set FUZZPTX_SEEDS)")
    return hits[0].read_text()


def _catalogue_by_tokens():
    return {tuple(sorted(f.opcode.split("."))): f for f in isa.forms() if f.ptxas_accepts}


_EXAMPLE = re.compile(r"^\s*((?:wmma|mma|ldmatrix|stmatrix)\.[\w.:]+)\s+(.*?);", re.M | re.S)


def _examples(text: str):
    """(opcode, vector lengths) of each instruction example whose operands are spelt out."""
    for m in _EXAMPLE.finditer(text):
        operands = m.group(2)
        if "..." in operands or "…" in operands:
            continue
        yield m.group(1), [len(v.split(",")) for v in re.findall(r"\{([^}]*)\}", operands)]


@pytest.mark.parametrize("seed", ["002", "004"])
def test_seed_examples_have_the_catalogue_register_counts(seed):
    """Every spelt-out instruction example in the seed matches its form's vector lengths
    (modifier order aside); seed 002's f64 C/D count is the one documented exception."""
    index = _catalogue_by_tokens()
    checked = 0
    for opcode, lengths in _examples(_seed(seed)):
        form = index.get(tuple(sorted(opcode.split("."))))
        if form is None:
            continue
        vecs = [o.count for o in form.operands if o.kind == "vec"]
        assert lengths == vecs, (opcode, lengths, vecs)
        checked += 1
    assert checked >= 3


def test_seed_004_mma_table_rows_are_catalogued():
    text = _seed("004")
    table = text[text.index("### Shape x Type Table"):text.index("### Type constraints")]
    have = {(f.atype, str(f.shape)) for f in isa.forms("mma")}
    rows = 0
    for line in table.splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if len(cells) < 4 or not cells[0].startswith("`"):
            continue
        types = re.findall(r"`\.(\w+)`", cells[0])
        for t in types:
            for shape in re.findall(r"m\d+n\d+k\d+", cells[1]):
                assert (t, shape) in have, (t, shape)
        rows += 1
    assert rows >= 8


def test_listing_rows_and_table():
    rows = listing.catalogue_rows()
    assert len(rows) == len(isa.forms())
    json.dumps(rows)
    table = listing.catalogue_table("ldmatrix")
    assert all(f.key in table for f in isa.forms("ldmatrix"))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_minimal_kernel_shape(family):
    form = isa.forms(family)[-1]
    m = minimal_kernel(form)
    assert tuple(map(int, m.version.split("."))) >= form.min_ptx
    assert m.target in ("sm_90a", form.target)
    body = m.kernels()[0].instructions()
    ops = [i.opcode for i in body]
    assert form.opcode in ops
    if family in ("wgmma", "wgmma.sp"):
        i = ops.index(form.opcode)
        assert ops[i - 1:i + 3] == ["wgmma.fence.sync.aligned", form.opcode, "wgmma.commit_group.sync.aligned",
                                    "wgmma.wait_group.sync.aligned"]
    produces = any(o.io in ("out", "inout") for o in form.operands)
    assert any(o.startswith("st.global") for o in ops) == produces
    text = emit(m)
    assert text.startswith(f".version {m.version}\n.target {m.target}")


def test_minimal_kernel_options():
    form = isa.by_key("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16|a=desc")
    m = minimal_kernel(form, scale_d_pred=True, immediates={"imm_scale_a": -1}, target="sm_90a", version=(8, 5))
    instr = next(i for i in m.kernels()[0].instructions() if i.opcode == form.opcode)
    assert isinstance(instr, Instr) and str(instr.operands[3]) == "%scale_d" and str(instr.operands[4]) == "-1"
    assert m.version == "8.5"
    low = isa.by_key("ldmatrix.sync.aligned.m8n8.x4.b16")
    assert minimal_kernel(low, target=build_target(low)).target == "sm_75"


def test_minimal_kernels_parse_back():
    """What strategies reuse must survive the parser: parse(emit(k)) == k for each family."""
    parse = pytest.importorskip("fuzzptx.ptx.parse").parse
    for fam in sorted(FAMILIES):
        for form in isa.forms(fam)[:12]:
            for m in (minimal_kernel(form, include_optional=True), minimal_kernel(form, scale_d_pred=True)):
                assert parse(emit(m)) == m, form.key


def test_catalogue_command(capsys):
    assert listing.main_catalogue(["--json", "--family", "mma.sp"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["key"] for r in rows] == [f.key for f in isa.forms("mma.sp")]
    assert listing.main_catalogue([]) == 0
    assert f"{len(isa.forms())} forms" in capsys.readouterr().out
