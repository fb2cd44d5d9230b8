"""Single instructions of every catalogue family, and single-instruction programs.

The form is drawn uniformly over the catalogue's forms (``operands.choice``: every
form at rate ~1/len(forms), however long the list), listed simplest first so the
shrinker moves toward the plain f16, small-N, dense, A-in-registers form.  Sweeps
(``instruction_programs``) hold several distinct forms in one kernel.
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

from fuzzptx.kernels import default_target, merged_name, minimal_kernel
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.ir import Addr, Function, Instr, Module, Reg, RegDecl, Vec

from .operands import choice, immediate_values, ints, pick

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
    """Uniform over the forms (``operands.choice``: a plain ``sampled_from`` of a list longer
    than 256 leans 4x toward its head), simplest first; one strategy object per list."""
    choices = ordered_forms(fams, max_d_regs)
    if not choices:
        raise ValueError(f"no catalogue forms for families {fams!r}")
    return choice(choices)


def form_immediates(form: Form) -> st.SearchStrategy[dict[str, int]]:
    """Defined values for every immediate slot of ``form`` (sparse selector within the defined set).

    One draw whatever the form (the slots' values are its mixed-radix digits, each list
    simplest first), so the shrinker can move to a simpler form with more immediate slots
    without the choices that follow shifting (a longer choice sequence never counts as
    simpler to Hypothesis: f16 forms, with four scale/transpose slots, were unreachable
    from an s8 form with none).
    """
    return _form_immediates(form.key)


@functools.lru_cache(maxsize=None)
def _form_immediates(key: str) -> st.SearchStrategy[dict[str, int]]:
    return _IMM_CODES.map(functools.partial(_decode_immediates, key))


def _decode_immediates(key: str, code: int) -> dict[str, int]:
    out = {}
    for role, values in _immediate_slots(key):
        out[role] = values[code % len(values)]
        code //= len(values)
    return out


@functools.lru_cache(maxsize=None)
def _immediate_slots(key: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    form = isa.by_key(key)
    slots = []
    for op in form.operands:
        if op.kind in ("imm", "pred_or_imm") and op.values:
            slots.append((op.role, immediate_values(op, form)))
    return tuple(slots)


#: 256 codes: every form's slots multiply to a power of two <= 128 (checked by a test), so
#: each slot's value is uniform over its list.
_IMM_CODES = st.integers(0, 255)


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
    imms = draw(form_immediates(form))
    pred = draw(_BOOLS)  # drawn for every form (see form_immediates)
    module = minimal_kernel(form, immediates=imms, scale_d_pred=form.has_operand("scale_d") and pred)
    for ins in module.kernels()[0].instructions():
        if ins.opcode == form.opcode:
            return ins
    raise AssertionError(f"minimal_kernel({form.key}) lost its instruction")


def _register_names(module: Module) -> dict[str, str]:
    """Every register a one-kernel module declares -> its name in a merged kernel.

    The declaration's type and count go in front (``kernels.merged_name``): sections run
    one after another, each initialising what it reads, so sections with the same
    declaration share registers.  ptxas then allocates the registers of one section, not
    of all: half the ptxas time on 20-form sweeps.
    """
    names: dict[str, str] = {}
    for stmt in module.kernels()[0].body:
        if isinstance(stmt, RegDecl):
            for n in stmt.names:
                names[n] = merged_name(stmt.type, n, stmt.count, stmt.vector)
                for i in range(stmt.count or 0):
                    names[f"{n}{i}"] = f"{names[n]}{i}"
    return names


def _rename(op, names: dict[str, str]):
    """The operand with every declared register renamed per ``names``."""
    if isinstance(op, Reg):
        new = names.get(op.name)
        return op if new is None else Reg(new)
    if isinstance(op, Vec):
        return Vec(tuple(_rename(o, names) for o in op.items))
    if isinstance(op, Addr):
        return Addr(_rename(op.base, names), op.offset) if isinstance(op.base, Reg) else op
    return op


def _renamed_body(module: Module) -> tuple[tuple, tuple]:
    """(register declarations, instructions but ``ret``) of a one-kernel module, renamed for merging."""
    names = _register_names(module)
    decls, code = [], []
    for stmt in module.kernels()[0].body:
        if isinstance(stmt, RegDecl):
            decls.append(replace(stmt, names=tuple(names[n] for n in stmt.names)))
        elif isinstance(stmt, Instr) and stmt.opcode != "ret":
            guard = replace(stmt.guard, reg=_rename(stmt.guard.reg, names)) if stmt.guard else None
            code.append(replace(stmt, operands=tuple(_rename(o, names) for o in stmt.operands), guard=guard))
    return tuple(decls), tuple(code)


def _join(modules: list[Module], bodies: list[tuple[tuple, tuple]]) -> Module:
    first = modules[0]
    version = max((m.version for m in modules), key=lambda v: tuple(int(x) for x in v.split(".")))
    items = [it for it in first.items if not isinstance(it, Function)]
    for m in modules[1:]:
        items += [it for it in m.items if not isinstance(it, Function) and it not in items]
    decls = list(dict.fromkeys(d for ds, _ in bodies for d in ds))  # each declaration once
    code = [c for _, cs in bodies for c in cs]
    kernel = replace(first.kernels()[0], body=tuple(decls + code + [Instr("ret")]))
    return replace(first, version=version, items=tuple(items) + (kernel,))


def merge_kernels(modules: list[Module]) -> Module:
    """One kernel running the bodies of several one-kernel modules in turn (registers of the
    same declaration shared, see ``_register_names``).

    The modules share their ``out`` parameter and module-scope ``smem`` array (minimal_kernel's).
    """
    return _join(modules, [_renamed_body(m) for m in modules])


# Sections are pure functions of (form, immediates, scale-d kind); Hypothesis replays most
# choices (its mutants copy earlier examples), so caching them saves most of the kernel
# building (generation profile, benchmarks/README.md).
@functools.lru_cache(maxsize=2048)
def _kernel(key: str, imms: tuple, pred: bool) -> Module:
    return minimal_kernel(isa.by_key(key), immediates=dict(imms), scale_d_pred=pred)


@functools.lru_cache(maxsize=2048)
def _merged_kernel(key: str, imms: tuple, pred: bool) -> Module:
    """``_kernel`` with its registers already named as merging names them (no renaming pass:
    that pass was half the generation time of a campaign, most sections being cache misses)."""
    return minimal_kernel(isa.by_key(key), immediates=dict(imms), scale_d_pred=pred, merged_names=True)


def _section(key: str, imms: tuple, pred: bool) -> tuple[tuple, tuple]:
    """(register declarations, instructions but ``ret``) of a form's section of a merged kernel."""
    body = _merged_kernel(key, imms, pred).kernels()[0].body
    return (tuple(s for s in body if isinstance(s, RegDecl)),
            tuple(s for s in body if isinstance(s, Instr) and s.opcode != "ret"))


def _family_key(family) -> tuple[str, ...] | None:
    return (family,) if isinstance(family, str) else (tuple(family) if family else None)


def _first_form(draw, family) -> Form:
    """A form of ``family``, uniform (for wgmma: dense or sparse first, two balanced halves,
    see pipelines.units)."""
    if family == WGMMA_FAMILIES:
        family = draw(pick(WGMMA_FAMILIES, width=2))
    return draw(_forms(_family_key(family), None))


@functools.lru_cache(maxsize=None)
def _target_forms(fams, target) -> tuple[tuple[Form, ...], dict[str, int]]:
    """The forms of ``fams`` built for ``target``, simplest first, and each one's place."""
    order = tuple(f for f in ordered_forms(fams) if default_target(f) == target)
    return order, {f.key: i for i, f in enumerate(order)}


@functools.lru_cache(maxsize=None)
def _strides(n: int) -> st.SearchStrategy[int]:
    return ints(1, 1) if n < 2 else choice(tuple(range(1, n)))


def sweep_forms(draw, family, max_forms: int) -> list[Form]:
    """1..max_forms distinct forms of ``family`` for one straight-line kernel.

    The first is uniform over the family and fixes the target; the others step through
    the forms built for that target (simplest first) from the first one by a uniform
    stride, a taken form giving way to the next free one.  Each form is uniform over its
    target's forms; sm_100a ldmatrix/stmatrix and sm_120a mma forms fill whole programs
    of their own instead of being dropped.  Shrinking: one form, stride 1, index 0.
    One stride draw places the whole sweep, so every Hypothesis mutant that copies some
    other integer over it moves the sweep to new forms (mutants are ~80% of examples).
    """
    first = _first_form(draw, family)
    n = draw(ints(1, max_forms))
    if n == 1:
        return [first]
    target = default_target(first)
    fams = _family_key(family)
    order, position = _target_forms(fams, target)
    stride = draw(_strides(len(order)))
    at = position[first.key]
    chosen, used = [first], {first.key}
    for j in range(1, min(n, len(order))):
        i = (at + j * stride) % len(order)
        while order[i].key in used:
            i = (i + 1) % len(order)
        chosen.append(order[i])
        used.add(order[i].key)
    return chosen


@st.composite
def instruction_programs(draw, family: str | tuple[str, ...] | None = None, max_forms: int = 4) -> Program:
    """A program of 1..max_forms instructions of distinct forms of ``family`` (``sweep_forms``),
    each in minimal_kernel's setting, one after another in one kernel."""
    chosen = sweep_forms(draw, family, max_forms)
    parts = []
    for form in chosen:
        _record(form)
        imms = tuple(sorted(draw(form_immediates(form)).items()))
        pred = draw(_BOOLS) and form.has_operand("scale_d")  # drawn for every form (see form_immediates)
        parts.append((form.key, imms, pred))
    event("control=straight")
    wg = any(f.family.startswith("wgmma") for f in chosen)
    threads = 128 if wg else 32 * draw(_WARPS)
    if len(parts) == 1:
        module = _kernel(*parts[0])
    else:
        module = _join([_merged_kernel(*p) for p in parts], [_section(*p) for p in parts])
    return Program(module, Launch("k", (1, 1, 1), (threads, 1, 1)),
                   (Buffer("out", "b32", OUT_WORDS, "zeros", 0, output=True),),
                   expect=(("ptxas", "accepted"), ("checker", "legal")),
                   notes=tuple(f"form: {f.key}" for f in chosen))


_BOOLS = st.booleans()
_WARPS = st.integers(1, 4)


@st.composite
def single_instruction_programs(draw, family: str | tuple[str, ...] | None = None) -> Program:
    """A runnable program around one instruction of ``family`` (minimal_kernel's kernel)."""
    form = draw(forms(family))
    _record(form)
    event("control=straight")
    imms = draw(form_immediates(form))
    pred = draw(_BOOLS) and form.has_operand("scale_d")  # drawn for every form (see form_immediates)
    module = minimal_kernel(form, immediates=imms, scale_d_pred=pred)
    threads = 128 if form.family.startswith("wgmma") else 32 * draw(_WARPS)
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
