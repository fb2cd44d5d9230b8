"""ISA-layer rules: every catalogue form is legal as written, and each kind of violation gets its
own rule id, the instruction's line and a message that names what is wrong."""
from __future__ import annotations

import random

import pytest

from fuzzptx import isa
from fuzzptx.oracles.checker import check_module
from support.experiments import COMMIT, FENCE, WAIT, kernel, store, wg
from fuzzptx.ptx.ir import Addr, Function, Imm, Instr, Module, Param, Reg, RegDecl, Vec
from fuzzptx.ptx.parse import parse


def isa_findings(text: str):
    return check_module(parse(text, "t.ptx"), layers=("isa",))


def one(text: str):
    found = isa_findings(text)
    assert len({(f.rule, f.line) for f in found}) >= 1, "expected an ISA finding"
    return found[0]


def wline(text: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if "mma_async" in ln)


def test_legal_kernel_has_no_isa_findings():
    assert isa_findings(kernel([FENCE, wg(), COMMIT, WAIT] + store())) == []


@pytest.mark.parametrize("old, new, rule, words", [
    ("m64n8k16", "m64n12k16", "isa.wgmma.shape", ["m64n12k16", ".m64n8k16"]),
    ("f32.f16.f16", "f32.f16.bf16", "isa.wgmma.types", [".f32.f16.bf16", ".f32.f16.f16"]),
    ("sync.aligned.m64", "sync.m64", "isa.wgmma.qualifier", ["missing .aligned"]),
    (", 1, 1, 1, 0, 0;", ", 2, 1, 1, 0, 0;", "isa.imm.scale-d", ["scale-d is 2", "0 or 1"]),
    (", 1, 1, 1, 0, 0;", ", 1, 2, 1, 0, 0;", "isa.imm.scale-a", ["scale-a is 2", "-1 or 1"]),
    (", 1, 1, 1, 0, 0;", ", 1, 1, 1, 2, 0;", "isa.imm.trans-a", ["trans-a is 2"]),
    ("%f1,%f2,%f3,%f4", "%f1,%f2,%f3", "isa.operands.vector-size", ["needs 4 registers, found 3"]),
    (", 0, 0;", ", 0, 0, 0;", "isa.operands.count", ["takes 8 operands", "found 9"]),
    ("%rd1, %rd2", "%r5, %rd2", "isa.reg.type", ["%r5", ".b32", ".b64"]),
    ("%rd1, %rd2", "%rq1, %rd2", "isa.reg.undeclared", ["%rq1"]),
])
def test_wgmma_violation(old, new, rule, words):
    text = kernel([FENCE, wg(), COMMIT, WAIT] + store())
    bad = text.replace(old, new, 1)
    assert bad != text
    found = isa_findings(bad)
    assert [(f.rule, f.line) for f in found] == [(rule, wline(bad))], [f.text() for f in found]
    for w in words:
        assert w in found[0].message, found[0].message


def test_scale_d_predicate_must_be_pred():
    text = kernel([FENCE, wg(sd="%r5"), COMMIT, WAIT] + store())
    assert [(f.rule, f.line) for f in isa_findings(text)] == [("isa.reg.type", wline(text))]


def test_guard_must_be_pred():
    text = kernel([FENCE, "@%r5 " + wg(), COMMIT, WAIT] + store())
    assert ("isa.pred.type", wline(text)) in [(f.rule, f.line) for f in isa_findings(text)]


def test_target_and_version():
    text = kernel([FENCE, wg(), COMMIT, WAIT] + store(), target="sm_90")
    rules = {f.rule for f in isa_findings(text)}
    assert rules == {"isa.target"}
    text = kernel([FENCE, wg(), COMMIT, WAIT] + store(), version="7.8")
    found = isa_findings(text)
    assert {f.rule for f in found} == {"isa.version"} and "8.0" in found[0].message
    # .target sm_90a itself (line 2), then fence, wgmma, commit, wait: one each, on their own lines
    assert sorted(f.line for f in found)[0] == 2 and "does not support .target sm_90a" in found[0].message
    assert len(found) == 5 and len({f.line for f in found}) == 5


def test_wait_group_operand_must_be_immediate():
    text = kernel([FENCE, wg(), COMMIT, "wgmma.wait_group.sync.aligned %r1;"] + store())
    assert [f.rule for f in isa_findings(text)] == ["isa.operands.kind"]


def test_mixed_s8_u8_needs_ptx_8_4():
    base = kernel([FENCE, "wgmma.mma_async.sync.aligned.m64n8k32.s32.s8.u8 {%r1,%r2,%r3,%r4}, %rd1, %rd2, 1;",
                   COMMIT, WAIT])
    assert {f.rule for f in isa_findings(base)} == {"isa.version"}
    assert isa_findings(base.replace(".version 8.0", ".version 8.4")) == []


# ------------------------------------------------------------------ every catalogue form


def _instance(form) -> Module:
    """One instruction per form with canonical, declared registers (a legal use by construction)."""
    decls: dict[str, int] = {}

    def reg(rtype: str) -> Reg:
        stem = "%x" + rtype.strip(".").replace("x", "v")
        k = decls.get(rtype, 0)
        decls[rtype] = k + 1
        return Reg(f"{stem}_{k}")

    ops = []
    for spec in form.operands:
        if spec.kind == "vec":
            ops.append(Vec(tuple(reg(spec.reg_types[0]) for _ in range(spec.count))))
        elif spec.kind == "reg":
            ops.append(reg(spec.reg_types[0]))
        elif spec.kind in ("imm", "pred_or_imm"):
            ops.append(Imm.of(spec.values[0]))
        elif spec.kind == "addr":
            ops.append(Addr(reg(spec.reg_types[0] if spec.reg_types else ".b64")))
    body = tuple(RegDecl(t, ("%x" + t.strip(".").replace("x", "v") + "_",), n) for t, n in decls.items())
    fn = Function("entry", "k", (Param(".param", ".u64", "p"),), body=body + (Instr(form.opcode, tuple(ops)),))
    major, minor = form.min_ptx
    return Module(version=f"{major}.{minor}", target=form.target, items=(fn,))


def test_every_catalogue_form_is_legal_to_the_isa_layer():
    rng = random.Random(7)
    forms = [f for f in isa.forms() if f.ptxas_accepts]
    sample = rng.sample(forms, 400) + [f for f in forms if not f.family.startswith("wgmma")][:200]
    for form in sample:
        got = check_module(_instance(form), layers=("isa",))
        assert got == [], (form.opcode, [g.text() for g in got])


def test_out_of_range_immediate_in_any_form_is_named():
    rng = random.Random(11)
    for form in rng.sample([f for f in isa.forms() if any(s.kind == "imm" and s.values for s in f.operands)], 60):
        m = _instance(form)
        instr = m.items[0].body[-1]
        k, spec = next((k, s) for k, s in enumerate(form.operands) if s.kind == "imm" and s.values)
        bad = max(spec.values) + 5
        ops = instr.operands[:k] + (Imm.of(bad),) + instr.operands[k + 1:]
        fn = m.items[0]
        m2 = Module(m.version, m.target, items=(Function(fn.kind, fn.name, fn.params,
                                                         body=fn.body[:-1] + (Instr(instr.opcode, ops),)),))
        rules = [f.rule for f in check_module(m2, layers=("isa",))]
        assert rules == ["isa.imm." + spec.role.removeprefix("imm_").replace("_", "-")], (form.opcode, rules)


def test_register_shadowing_a_special_register_makes_its_selector_an_error():
    """``.reg .b32 %tid;`` shadows the special register: ptxas rejects ``%tid.x`` ("Unknown video
    selector", tests/data/checker/tid_register_shadow.ptx); a vector %tid makes .x its element."""
    from support.experiments import PRE

    scalar = kernel([FENCE, wg(), COMMIT, WAIT] + store(), pre=[".reg .b32 %tid;"] + PRE)
    f = one(scalar)
    assert f.rule == "isa.reg.selector" and "%tid.x" in f.message
    assert "%tid.x" in scalar.splitlines()[f.line - 1]
    assert isa_findings(kernel([FENCE, wg(), COMMIT, WAIT] + store(), pre=[".reg .v4 .b32 %tid;"] + PRE)) == []
    assert isa_findings(kernel([FENCE, wg(), COMMIT, WAIT] + store(),
                               pre=[".reg .b32 %laneid;", "mov.u32 %r25, %laneid;"] + PRE)) == []


def test_plain_names_match_the_dataflow_rules():
    """The fast defs/uses for plain instructions (``dataflow._plain_names``) gives exactly
    ``fuzzptx.ptx.dataflow.defs_uses``'s names wherever it answers, on generated programs (their
    mutants included) and on hand-picked awkward operands."""
    from fuzzptx.engine.generate import draw_direct
    from fuzzptx.ptx.dataflow import _plain_names, defs_uses
    from fuzzptx.ptx.ir import Guard, Neg, Sym

    instrs = [i for p in draw_direct(40, 3) for f in p.module.functions() if f.body for i in f.instructions()]
    instrs += [
        Instr("mov.u32", (Reg("%r1"), Reg("%tid.x"))),
        Instr("mov.u32", (Reg("%tid.x"), Reg("%r1"))),  # a special register as destination: no def
        Instr("ld.global.v4.f32", (Vec((Reg("%f1"), Reg("%f2"), Reg("%f1"), Reg("%f3"))), Addr(Reg("%rd1"), 16))),
        Instr("st.shared.v2.f32", (Addr(Sym("smem"), 8), Vec((Reg("%f1"), Imm.of(0))))),
        Instr("setp.lt.s32", (Reg("%p1|%p2"), Reg("%r1"), Imm.of(3))),
        Instr("selp.b32", (Reg("%r1"), Reg("%r2"), Reg("%r3"), Neg(Reg("%p1")))),
        Instr("add.s32", (Reg("%r1"), Reg("%r1"), Imm.of(1)), Guard(Reg("%p1"), True)),
        Instr("bar.sync", (Imm.of(0),)),
        Instr("ld.param.u64", (Reg("%rd1"), Addr(Sym("p"), 0))),
        Instr("ld.global.u32", (Addr(Reg("%rd1"), 0), Reg("%r1"))),  # a malformed mutant: no dest
    ]
    answered = 0
    for ins in instrs:
        fast = _plain_names(ins)
        if fast is None:
            continue
        answered += 1
        d, u = defs_uses(ins)
        assert fast == (frozenset(r.name for r in d), frozenset(r.name for r in u)), ins
    assert answered > len(instrs) // 2
