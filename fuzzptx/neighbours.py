"""Nearest illegal neighbours of a catalogue form, each naming the one rule it breaks.

A neighbour is the form's minimal kernel with one thing changed: a shape just
outside the table, a type mix the table lacks, an immediate outside its values, a
register vector one too long or short, a wrong register type, a modifier the form
may not take, or a target / PTX version below the form's minimum.  Every neighbour
expects ptxas to reject it; the conformance suite checks that it does.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from fuzzptx import isa
from fuzzptx.isa import wgmma
from fuzzptx.isa.model import Form, OperandSpec, Shape
from fuzzptx.isa.warp import target_rank
from fuzzptx.kernels import TARGET_MIN_PTX, build_target, default_version, minimal_kernel
from fuzzptx.ptx.ir import Module

TARGET_LADDER = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a")
PTX_VERSIONS = tuple((6, m) for m in range(6)) + tuple((7, m) for m in range(9)) + tuple((8, m) for m in range(9)) + ((9, 0),)
TYPE_TOKENS = ("f16", "bf16", "tf32", "e4m3", "e5m2", "f32", "f64", "s8", "u8", "s4", "u4", "b1", "s32", "b16", "b8",
               "e3m2", "e2m3", "e2m1")
WRONG_REG_TYPES = (".f32", ".f16x2", ".b32", ".u32", ".s32", ".f64", ".b64", ".u64", ".s64", ".b16")

# What each rule changes (the report's explanations are built from these).
RULES: dict[str, str] = {
    "n-not-in-table": "N moved by 8 to a value the shape table lacks",
    "k-wrong": "K changed to a value no form of this type has",
    "type-not-in-table": "one element type swapped for a mix the type table lacks",
    "imm-out-of-range": "an immediate operand given a value outside its legal set",
    "reg-count-plus": "a register vector given one register too many",
    "reg-count-minus": "a register vector given one register too few",
    "reg-type-wrong": "a register operand declared with a type the form does not take",
    "trans-not-allowed": "imm-trans operands added to a form whose type forbids transpose",
    "satfinite-not-allowed": ".satfinite added to a form that has no saturating variant",
    "layout-not-allowed": "a .row/.col layout the form fixes changed",
    "trans-required": ".trans removed where the shape requires it",
    "num-not-in-table": "a matrix count (.xN) the shape does not take",
    "space-not-allowed": "a state space the instruction does not take",
    "target-below-minimum": ".target set one step below the form's minimum target",
    "version-below-minimum": ".version set one step below the form's minimum PTX version",
}


@dataclass(frozen=True)
class Case:
    """One kernel for ptxas with the verdict the catalogue predicts.

    ``rule`` is ``<family>.<rule>`` (``wgmma.n-not-in-table``) for neighbours and
    ``<family>.legal...`` for the form itself; ``detail`` says what was changed.
    """

    form_key: str
    rule: str
    module: Module
    expect: str  # "accept" | "reject"
    detail: str = ""

    @property
    def family(self) -> str:
        return self.rule.rsplit(".", 1)[0]

    @property
    def rule_name(self) -> str:
        return self.rule.rsplit(".", 1)[1]


@functools.lru_cache(maxsize=None)
def _opcodes() -> frozenset[str]:
    return frozenset(f.opcode for f in isa.forms()) | frozenset(f.opcode for f in isa.warp.spec_forms())


def _tokens(op: str) -> list[str]:
    return op.split(".")


def _with_shape(form: Form, shape: Shape) -> Form:
    toks = [str(shape) if t == str(form.shape) else t for t in _tokens(form.opcode)]
    ops = form.operands
    if form.family in ("wgmma", "wgmma.sp"):
        n = wgmma.d_register_count(form.dtype, shape.n)
        ops = tuple(replace(o, count=n) if o.role == "d" else o for o in ops)
    return replace(form, opcode=".".join(toks), shape=shape, operands=ops)


def _is_new(op: str) -> bool:
    return op not in _opcodes()


def _case(form: Form, rule: str, mutated: Form, detail: str, **kw) -> Case:
    return Case(form.key, f"{form.family}.{rule}", minimal_kernel(mutated, **kw), "reject", detail)


def _shape_neighbours(form: Form) -> list[Case]:
    out: list[Case] = []
    s = form.shape
    if s is None:
        return out
    if form.family in ("wgmma", "wgmma.sp"):
        for n in (s.n + 8, s.n - 8):
            cand = _with_shape(form, Shape(s.m, n, s.k))
            if 8 <= n <= 264 and _is_new(cand.opcode):
                out.append(_case(form, "n-not-in-table", cand, f"n={n}"))
                break
    for k in (s.k * 2, s.k // 2, s.k * 4):
        cand = _with_shape(form, Shape(s.m, s.n, k))
        if k > 0 and _is_new(cand.opcode):
            out.append(_case(form, "k-wrong", cand, f"k={k}"))
            break
    return out


def _type_span(form: Form) -> tuple[int, int] | None:
    """Index range of the element-type tokens (dtype.atype.btype[.ctype]) in the opcode."""
    toks = _tokens(form.opcode)
    for seq in ([form.dtype, form.atype, form.btype, form.ctype], [form.dtype, form.atype, form.btype]):
        if all(seq):
            for i in range(len(toks) - len(seq) + 1):
                if toks[i:i + len(seq)] == seq:
                    return i, i + len(seq)
    for i in range(len(toks) - 1, -1, -1):  # loads/stores/f16 wmma.mma: the last type token
        if toks[i] in TYPE_TOKENS or toks[i].startswith("b8x16"):
            return i, i + 1
    return None


def _type_neighbour(form: Form) -> list[Case]:
    span = _type_span(form)
    if span is None:
        return []
    toks = _tokens(form.opcode)
    pos = span[0] + 2 if span[1] - span[0] >= 3 else span[1] - 1  # btype, or the lone type
    for t in TYPE_TOKENS:
        if t == toks[pos]:
            continue
        cand = toks[:pos] + [t] + toks[pos + 1:]
        if _is_new(".".join(cand)):
            return [_case(form, "type-not-in-table", replace(form, opcode=".".join(cand)), f"{toks[pos]}->{t}")]
    return []


def _out_of_range(op: OperandSpec) -> int:
    vals = op.values
    if op.role == "n":
        return min(vals) - 1
    if min(vals) < 0 < max(vals) and 0 not in vals:
        return 0
    return max(vals) + 1


def _imm_neighbours(form: Form) -> list[Case]:
    out = []
    for op in form.operands:
        if op.kind in ("imm", "pred_or_imm") and op.values:
            v = _out_of_range(op)
            out.append(Case(form.key, f"{form.family}.imm-out-of-range",
                            minimal_kernel(form, immediates={op.role: v}), "reject", f"{op.role}={v}"))
    return out


def _with_operand(form: Form, role: str, **changes) -> Form:
    return replace(form, operands=tuple(replace(o, **changes) if o.role == role else o for o in form.operands))


def _reg_neighbours(form: Form, types: bool = True) -> list[Case]:
    """Register count one off (always) and a wrong register type (when ``types``)."""
    out = []
    vecs = [o for o in form.operands if o.kind == "vec"]
    if vecs:
        o = vecs[0]
        out.append(_case(form, "reg-count-plus", _with_operand(form, o.role, count=o.count + 1), f"{o.role}:{o.count + 1}"))
        shrink = next((v for v in vecs if v.count > 1), None)
        if shrink is not None:
            out.append(_case(form, "reg-count-minus", _with_operand(form, shrink.role, count=shrink.count - 1),
                             f"{shrink.role}:{shrink.count - 1}"))
    typed = vecs[:1] + [o for o in form.operands if o.kind == "reg" and o.role.endswith("desc")][:1]
    for o in typed if types else ():
        width = 64 if o.reg_types[0] in (".f64", ".b64", ".u64", ".s64") else 32
        same = [t for t in WRONG_REG_TYPES if t not in o.reg_types and (t in (".f64", ".b64", ".u64", ".s64")) == (width == 64)]
        other = [t for t in WRONG_REG_TYPES if t not in o.reg_types]
        wrong = (same or other)[0]
        out.append(_case(form, "reg-type-wrong", _with_operand(form, o.role, reg_types=(wrong,)), f"{o.role}:{wrong}"))
    return out


def _modifier_neighbours(form: Form) -> list[Case]:
    out: list[Case] = []
    toks = _tokens(form.opcode)
    fam = form.family
    if fam in ("wgmma", "wgmma.sp") and form.has_operand("imm_scale_a"):
        # tf32/fp8 take no imm-trans at all; f16/bf16 with A in registers take only imm-trans-b.
        if not form.has_operand("imm_trans_b"):
            n_extra = 2 if form.a_source == "desc" else 1
        else:
            n_extra = 1 if form.a_source == "reg" else 0
        extra = tuple(OperandSpec(f"imm_trans_x{i}", "imm", values=(0, 1)) for i in range(n_extra))
        if extra:
            out.append(_case(form, "trans-not-allowed", replace(form, operands=form.operands + extra),
                             f"{n_extra} extra imm-trans 0"))
    if fam in ("wgmma", "wgmma.sp", "mma", "mma.sp", "wmma.mma") and not form.satfinite and form.dtype != "s32":
        at = toks.index(str(form.shape)) + 1
        if fam in ("mma", "mma.sp"):
            at += 2
        cand = ".".join(toks[:at] + ["satfinite"] + toks[at:])
        out.append(_case(form, "satfinite-not-allowed", replace(form, opcode=cand), ".satfinite"))
    for i, t in enumerate(toks):  # flip one .row/.col: a neighbour where the table fixes the layout
        if t in ("row", "col") and fam in ("mma", "mma.sp", "wmma.load", "wmma.store", "wmma.mma"):
            cand = toks[:i] + ["col" if t == "row" else "row"] + toks[i + 1:]
            if _is_new(".".join(cand)):
                out.append(_case(form, "layout-not-allowed", replace(form, opcode=".".join(cand)), f"{t}->{cand[i]}"))
                break
    if fam in ("ldmatrix", "stmatrix"):
        no_trans = ".".join(t for t in toks if t != "trans")
        if form.attr("trans") and _is_new(no_trans):
            out.append(_case(form, "trans-required", replace(form, opcode=no_trans), "no .trans"))
        if not form.attr("trans"):
            i = toks.index(f"x{form.attr('num')}") + 1
            with_trans = ".".join(toks[:i] + ["trans"] + toks[i:])
            if _is_new(with_trans):
                out.append(_case(form, "trans-not-allowed", replace(form, opcode=with_trans), ".trans"))
        for num in (4, 8, 3):
            cand = ".".join(f"x{num}" if t == f"x{form.attr('num')}" else t for t in toks)
            if _is_new(cand):
                regs = form.operands[0 if fam == "ldmatrix" else 1]
                per = regs.count // int(form.attr("num"))  # type: ignore[arg-type]
                out.append(_case(form, "num-not-in-table",
                                 _with_operand(replace(form, opcode=cand), "r", count=per * num), f"x{num}"))
                break
    if fam in ("ldmatrix", "stmatrix", "wmma.load", "wmma.store") and not form.attr("space"):
        bad = "global" if fam in ("ldmatrix", "stmatrix") else "const"
        i = len(toks) - (1 if not toks[-1].startswith("b6x16") and not toks[-1].startswith("b4x16") else 2)
        cand = ".".join(toks[:i] + [bad] + toks[i:])
        out.append(_case(form, "space-not-allowed", replace(form, opcode=cand), f".{bad}"))
    return out


def _prev(seq: tuple, item) -> object | None:
    lower = [x for x in seq if x < item]
    return lower[-1] if lower else None


def _floor_neighbours(form: Form) -> list[Case]:
    out = []
    tgt = build_target(form)
    below = [t for t in TARGET_LADDER if target_rank(t) < target_rank(form.target)]
    if below and target_rank(form.target) > target_rank("sm_75"):
        t = below[-1]
        out.append(_case(form, "target-below-minimum", form, t, target=t, version=default_version(form, t)))
    v = _prev(PTX_VERSIONS, form.min_ptx)
    if v is not None and TARGET_MIN_PTX.get(tgt, (9, 9)) <= v:
        out.append(_case(form, "version-below-minimum", form, f"{v[0]}.{v[1]}", target=tgt, version=v))
    return out


# wgmma rules whose outcome cannot depend on N are tried on these N only (unless every_n):
# they cost a ptxas run each and ~36 N per row would multiply them for nothing new.
REPRESENTATIVE_N = (8, 16, 24, 128, 256)


def neighbours(form: Form, *, every_n: bool = False) -> list[Case]:
    """The nearest illegal neighbours of ``form`` (none for forms ptxas rejects anyway).

    Shape and register-count neighbours are made for every form; the rest, for wgmma,
    only at ``REPRESENTATIVE_N`` unless ``every_n``.
    """
    if not form.ptxas_accepts:
        return []
    every = every_n or form.shape is None or not form.family.startswith("wgmma") or form.shape.n in REPRESENTATIVE_N
    regs = _reg_neighbours(form, types=every)
    out = _shape_neighbours(form) + regs
    if every:
        out += _type_neighbour(form) + _imm_neighbours(form) + _modifier_neighbours(form) + _floor_neighbours(form)
    return out


__all__ = ["Case", "RULES", "REPRESENTATIVE_N", "neighbours"]
