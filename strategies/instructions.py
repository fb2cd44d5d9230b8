"""Single instructions of every catalogue family, and single-instruction programs.

The form is drawn uniformly over the catalogue's forms (uniform at the leaves,
so every form is reachable at rate 1/len(forms)), listed simplest first so the
shrinker moves toward the plain f16, small-N, dense, A-in-registers form.
Operands follow the form's ``OperandSpec``s; the kernel around the instruction
is helper "catalogue"'s ``minimal_kernel`` (registers, descriptors, addresses).
"""
from __future__ import annotations

import functools

from hypothesis import event, strategies as st

# The minimal kernels point wmma loads/stores (and their strided rows) at the ``out``
# buffer: 64 KiB covers the largest fragment at the largest stride they use, so a
# legal program never reads past its buffer.
OUT_WORDS = 16384

from fuzzptx import isa
from fuzzptx.isa import FLOAT_TYPES, Form
from dataclasses import replace

from fuzzptx.kernels import default_target, minimal_kernel
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.ir import Addr, Function, Instr, Module, Reg, RegDecl, Vec

from .operands import immediates, pick

WGMMA_FAMILIES = ("wgmma", "wgmma.sp")
SYNC_FAMILIES = ("wgmma.fence", "wgmma.commit_group", "wgmma.wait_group")


@functools.lru_cache(maxsize=None)
def _family_rank() -> dict[str, int]:
    return {f: i for i, f in enumerate(isa.families())}


def simplicity(form: Form) -> tuple:
    """Sort key: dense before sparse, f16 before other floats before integers, small N, A in registers."""
    n = form.shape.n if form.shape else 0
    return (_family_rank()[form.family], form.atype != "f16", form.atype not in FLOAT_TYPES, form.atype,
            n, form.dtype != "f32", form.satfinite, form.a_source != "reg", form.opcode)


@functools.lru_cache(maxsize=None)
def ordered_forms(families: tuple[str, ...] | None = None, max_d_regs: int | None = None) -> tuple[Form, ...]:
    """Catalogue forms of these families (all if None) that ptxas accepts, simplest first;
    optionally with D registers <= a budget.  Spec-only forms (``ptxas_accepts`` False)
    are drawn by ``spec_only_programs`` instead."""
    out = [f for f in isa.forms() if (families is None or f.family in families) and f.ptxas_accepts]
    if max_d_regs is not None:
        out = [f for f in out if not f.has_operand("d") or f.operand("d").count <= max_d_regs]
    return tuple(sorted(out, key=simplicity))


def forms(family: str | tuple[str, ...] | None = None, *, max_d_regs: int | None = None) -> st.SearchStrategy[Form]:
    """A catalogue form, uniform over the forms of ``family`` (a name, names, or all).

    ``max_d_regs`` (rounded down to a power of two) keeps accumulators within a register budget.
    """
    fams = (family,) if isinstance(family, str) else (tuple(family) if family else None)
    if max_d_regs is not None:
        max_d_regs = 1 << max(0, max_d_regs.bit_length() - 1)
    return _forms(fams, max_d_regs)


@functools.lru_cache(maxsize=None)
def _forms(fams: tuple[str, ...] | None, max_d_regs: int | None) -> st.SearchStrategy[Form]:
    """Uniform over the forms; one strategy object per list (Hypothesis hashes the elements once).

    A hashed 32-bit pick was tried to fight Hypothesis's repeats of earlier choices: it
    reached no more distinct forms inside whole programs and broke shrinking, so the
    plain simplest-first ``sampled_from`` stays.
    """
    choices = ordered_forms(fams, max_d_regs)
    if not choices:
        raise ValueError(f"no catalogue forms for families {fams!r}")
    return st.sampled_from(choices)


@st.composite
def form_immediates(draw, form: Form) -> dict[str, int]:
    """Defined values for every immediate slot of ``form`` (sparse selector within the defined set)."""
    out = {}
    for op in form.operands:
        if op.kind in ("imm", "pred_or_imm") and op.values:
            out[op.role] = draw(immediates(op, form))
    return out


def _record(form: Form) -> None:
    event(f"family={form.family}")
    if form.shape is not None:
        event(f"shape={form.shape}")
    if form.atype:
        event(f"type={form.atype}->{form.dtype}")


@st.composite
def instructions(draw, family: str | tuple[str, ...] | None = None) -> Instr:
    """One instruction of ``family`` with operands per its form (registers named by role)."""
    form = draw(forms(family))
    _record(form)
    module = minimal_kernel(form, immediates=draw(form_immediates(form)),
                            scale_d_pred=form.has_operand("scale_d") and draw(st.booleans()))
    for ins in module.kernels()[0].instructions():
        if ins.opcode == form.opcode:
            return ins
    raise AssertionError(f"minimal_kernel({form.key}) lost its instruction")


_SPECIAL = ("%tid", "%ntid", "%laneid", "%warpid", "%ctaid", "%nctaid", "%clock", "%smid")


def _rename(op, prefix: str):
    """The operand with every ordinary register renamed ``%x`` -> ``%<prefix>x``."""
    if isinstance(op, Reg):
        return op if op.name.startswith(_SPECIAL) else Reg("%" + prefix + op.name[1:])
    if isinstance(op, Vec):
        return Vec(tuple(_rename(o, prefix) for o in op.items))
    if isinstance(op, Addr):
        return Addr(_rename(op.base, prefix), op.offset) if isinstance(op.base, Reg) else op
    return op


def merge_kernels(modules: list[Module]) -> Module:
    """One kernel running the bodies of several one-kernel modules in turn (registers renamed apart).

    The modules share their ``out`` parameter and module-scope ``smem`` array (minimal_kernel's).
    """
    decls, code = [], []
    for i, m in enumerate(modules):
        prefix = f"i{i}_"
        for stmt in m.kernels()[0].body:
            if isinstance(stmt, RegDecl):
                decls.append(replace(stmt, names=tuple("%" + prefix + n[1:] for n in stmt.names)))
            elif isinstance(stmt, Instr) and stmt.opcode != "ret":
                guard = replace(stmt.guard, reg=_rename(stmt.guard.reg, prefix)) if stmt.guard else None
                code.append(replace(stmt, operands=tuple(_rename(o, prefix) for o in stmt.operands), guard=guard))
    first = modules[0]
    version = max((m.version for m in modules), key=lambda v: tuple(int(x) for x in v.split(".")))
    items = [it for it in first.items if not isinstance(it, Function)]
    for m in modules[1:]:
        items += [it for it in m.items if not isinstance(it, Function) and it not in items]
    kernel = replace(first.kernels()[0], body=tuple(decls + code + [Instr("ret")]))
    return replace(first, version=version, items=tuple(items) + (kernel,))


@st.composite
def instruction_programs(draw, family: str | tuple[str, ...] | None = None, max_forms: int = 4) -> Program:
    """A program of 1..max_forms instructions of ``family`` (each in minimal_kernel's setting,
    one after another in one kernel; all share the first form's target)."""
    def one_form():
        if family == WGMMA_FAMILIES:  # dense or sparse first: two balanced halves (see pipelines.units)
            return draw(forms(draw(pick(WGMMA_FAMILIES, width=2))))
        return draw(forms(family))

    first = one_form()
    chosen = [first]
    target = default_target(first)
    for _ in range(draw(st.integers(1, max_forms)) - 1):
        f = one_form()
        if default_target(f) == target:
            chosen.append(f)
    modules = []
    for form in chosen:
        _record(form)
        imms = draw(form_immediates(form))
        pred = form.has_operand("scale_d") and draw(st.booleans())
        modules.append(minimal_kernel(form, immediates=imms, scale_d_pred=pred))
    event("control=straight")
    wg = any(f.family.startswith("wgmma") for f in chosen)
    threads = 128 if wg else 32 * draw(st.integers(1, 4))
    return Program(merge_kernels(modules) if len(modules) > 1 else modules[0],
                   Launch("k", (1, 1, 1), (threads, 1, 1)),
                   (Buffer("out", "b32", OUT_WORDS, "zeros", 0, output=True),),
                   expect=(("ptxas", "accepted"), ("checker", "legal")),
                   notes=tuple(f"form: {f.key}" for f in chosen))


@st.composite
def single_instruction_programs(draw, family: str | tuple[str, ...] | None = None) -> Program:
    """A runnable program around one instruction of ``family`` (minimal_kernel's kernel)."""
    form = draw(forms(family))
    _record(form)
    event("control=straight")
    imms = draw(form_immediates(form))
    pred = form.has_operand("scale_d") and draw(st.booleans())
    module = minimal_kernel(form, immediates=imms, scale_d_pred=pred)
    threads = 128 if form.family.startswith("wgmma") else 32 * draw(st.integers(1, 4))
    return Program(module, Launch("k", (1, 1, 1), (threads, 1, 1)),
                   (Buffer("out", "b32", OUT_WORDS, "zeros", 0, output=True),),
                   expect=(("ptxas", "accepted"), ("checker", "legal")),
                   notes=(f"form: {form.key}",))


def spec_only_forms() -> tuple[Form, ...]:
    """Forms the spec lists but ptxas 13.0.88 rejects (the catalogue's ``SPEC_EXCEPTIONS``)."""
    return tuple(sorted((f for f in isa.forms() if not f.ptxas_accepts), key=simplicity))


@st.composite
def spec_only_programs(draw) -> Program:
    """A single-instruction program of a spec-only form: legal per the spec, rejected by ptxas."""
    choices = spec_only_forms()
    form = draw(st.sampled_from(choices))
    module = minimal_kernel(form, immediates=draw(form_immediates(form)))
    return Program(module, Launch("k", (1, 1, 1), (32, 1, 1)),
                   (Buffer("out", "b32", OUT_WORDS, "zeros", 0, output=True),),
                   expect=(("ptxas", "rejected"), ("checker", "legal")),
                   notes=(f"form: {form.key}", f"spec-only form: {form.ptxas_note}"))


__all__ = ["instruction_programs", "merge_kernels", "spec_only_forms", "spec_only_programs", "forms", "ordered_forms", "form_immediates", "instructions", "single_instruction_programs",
           "simplicity", "WGMMA_FAMILIES", "SYNC_FAMILIES"]
