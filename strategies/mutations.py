"""Illegal programs: named mutations of legal ones, each labelled with the rule it breaks.

Each ``Mutation`` edits a legal program's IR in one place and records in
``Program.expect`` what each judge should say:

  ("ptxas", "rejected")                     ptxas refuses it (an ISA rule)
  ("ptxas", "accepted")                     ptxas takes it silently
  ("ptxas", "accepted C7519")               ptxas takes it and prints this code, unless it
                                            serialised the pipeline for another reason first
                                            (a SERIALISED code): then the advisory is moot
  ("checker", "illegal: <rule>")            the ISA rule broken
  ("checker", "undefined: <rule>")          the PTX spec rule broken (undefined behaviour)

Rule names are helper "checker"'s rule ids (``isa.imm`` stands for ``isa.imm.<operand>``);
``spec.smem.out-of-bounds`` has no checker rule yet, and the checker does not see
``spec.desc.base-offset`` when the descriptor is moved at run time (both reported).
  ("reference", "undefined")                values the spec leaves free

The ptxas verdicts for undefined-behaviour rules were measured with real ptxas
13.0.88 (tests/test_strategies_mutations.py re-checks every one on each run).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable

from hypothesis import event, strategies as st

from fuzzptx import isa
from fuzzptx.isa.encoding import BASE_OFFSET_FIELD, SWIZZLE_FIELD, descriptor_encode, descriptor_field
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Addr, Function, Guard, Imm, Instr, Label, Param, Reg, RegDecl, Sym, Vec, walk
from fuzzptx.ptx.smem import shared_layout
from .mainloops import TWIN_RULES, fault_of, illegal_mainloop_programs, twin_name
from . import tensor_copies
from .programs import wgmma_programs

WGMMA_PREFIX = "wgmma.mma_async"
#: ptxas's "wgmma serialized due to ..." codes (seed 001: C7509-C7520; C7517/C7519 are injections).
SERIALISED = frozenset(f"C75{i:02d}" for i in range(9, 21)) - {"C7517", "C7519"}
FENCE = "wgmma.fence.sync.aligned"
COMMIT = "wgmma.commit_group.sync.aligned"
WAIT = "wgmma.wait_group.sync.aligned"


@dataclass(frozen=True)
class Mutation:
    """A named way to break one rule. ``apply(program, choice)`` returns the mutant or None."""

    name: str
    rule: str
    kind: str  # "illegal" (ISA: ptxas must reject) or "undefined" (spec: undefined behaviour)
    ptxas: str  # the verdict text ptxas gives: "rejected", "accepted", "accepted C7519 ..."
    apply: Callable[[Program, int], Program | None]
    # the instructions it made undefined, found in the kernel's instructions (site_lines)
    site: Callable[[list], list] | None = None
    # its undefined behaviour is one the H100 numerics model defines (no finding in hardware numerics)
    hardware_defined: bool = False

    def ptxas_agrees(self, accepted: bool, codes) -> bool:
        """Whether a ptxas result (accepted?, diagnostic codes) matches this mutation's label."""
        return verdict_holds(self.ptxas, accepted, codes)

    def expect(self) -> tuple[tuple[str, str], ...]:
        out = [("ptxas", self.ptxas)]
        if self.rule:  # (mainloop twins no checker rule sees yet have none)
            out.append(("checker", f"{self.kind}: {self.rule}"))
        if self.kind == "undefined":
            out.append(("reference", "undefined"))
        return tuple(out)


def verdict_holds(verdict: str, accepted: bool, codes) -> bool:
    """``"rejected"``, ``"accepted"`` or ``"accepted C75xx ..."`` against a ptxas result."""
    words = verdict.split()
    if words[0] == "rejected":
        return not accepted
    if not accepted:
        return False
    codes = set(c for c in codes if c)
    want = set(words[1:])
    return want <= codes or bool(codes & (SERIALISED - want))


# ------------------------------------------------------------------ IR surgery


def _kernel(p: Program) -> tuple[int, Function]:
    for i, item in enumerate(p.module.items):
        if isinstance(item, Function) and item.kind == "entry" and item.name == p.launch.kernel:
            return i, item
    raise KeyError(p.launch.kernel)


def _with_body(p: Program, body: list) -> Program:
    return p.with_kernel_body(body)


def _body(p: Program) -> list:
    return list(_kernel(p)[1].body)


def _find(body: list, pred) -> list[int]:
    return [i for i, s in enumerate(body) if isinstance(s, Instr) and pred(s)]


def _mmas(body: list) -> list[int]:
    return _find(body, lambda s: s.opcode.startswith(WGMMA_PREFIX))


def _always_reached(body: list, i: int) -> bool:
    """Every launch runs ``body[i]`` on some thread: no earlier ``ret``/``exit`` and no earlier
    branch that jumps forward over it for the whole launch (unguarded, or on a predicate that
    no thread index feeds: a kernel parameter's flag).  A branch on the thread index (a
    warpgroup's role) leaves the other threads running it.  A mutation that makes a run
    undefined at one instruction must pick such a one, or its label lies (found by a campaign:
    an accumulator written after a wgmma that a parameter's branch jumped over; the reference
    ran the mutant fully defined)."""
    labels = {s.name: k for k, s in enumerate(body) if isinstance(s, Label)}
    for s in body[:i]:
        if not isinstance(s, Instr):
            continue
        if s.base in ("ret", "exit"):
            return False
        if s.base in ("bra", "brx") and not (s.operands and isinstance(s.operands[0], Sym)
                                             and labels.get(s.operands[0].name, i) < i):
            if s.guard is None or not _thread_dependent(body, i, s.guard.reg):
                return False
    return True


def _thread_dependent(body: list, i: int, reg: Reg) -> bool:
    """``reg`` (as defined before ``body[i]``) is computed from a thread index register."""
    seen, todo = set(), [reg.name]
    while todo:
        name = todo.pop()
        if name.startswith(("%tid", "%laneid", "%warpid")):
            return True
        if name in seen:
            continue
        seen.add(name)
        for s in body[:i]:
            if isinstance(s, Instr) and s.operands and isinstance(s.operands[0], Reg) and s.operands[0].name == name:
                todo += [o.name for o in s.operands[1:] if isinstance(o, Reg)]
    return False


def _pick(xs: list, choice: int):
    return xs[choice % len(xs)] if xs else None


def _declare(body: list, type_: str, name: str) -> list:
    """Add ``.reg type name;`` before the first instruction."""
    first = next(i for i, s in enumerate(body) if not isinstance(s, RegDecl))
    return body[:first] + [RegDecl(type_, (name,))] + body[first:]


def _replace_instr(p: Program, idx: int, new: Instr | list) -> Program:
    body = _body(p)
    body[idx: idx + 1] = new if isinstance(new, list) else [new]
    return _with_body(p, body)


def _set_operand(ins: Instr, role: str, value) -> Instr | None:
    form = isa.form_for(ins)
    if form is None or not form.has_operand(role):
        return None
    k = [o.role for o in form.operands].index(role)
    ops = list(ins.operands)
    ops[k] = value
    return replace(ins, operands=tuple(ops))


def _opcode_parts(opcode: str) -> list[str]:
    return opcode.split(".")


# ------------------------------------------------------------------ ISA rules (ptxas rejects)


def _bad_shape(p: Program, choice: int) -> Program | None:
    body = _body(p)
    idx = _pick(_mmas(body), choice)
    if idx is None:
        return None
    ins = body[idx]
    form = isa.form_for(ins)
    legal = {f.shape.n for f in isa.forms(form.family) if (f.atype, f.btype, f.dtype) == (form.atype, form.btype, form.dtype)}
    n = next(n for n in range(form.shape.n + 1, 1000) if n not in legal)
    opcode = ins.opcode.replace(f".{form.shape}.", f".m64n{n}k{form.shape.k}.")
    return _replace_instr(p, idx, replace(ins, opcode=opcode))


def _type_mix(p: Program, choice: int) -> Program | None:
    body = _body(p)
    idx = _pick(_mmas(body), choice)
    if idx is None:
        return None
    ins = body[idx]
    form = isa.form_for(ins)
    pairs = {(f.atype, f.btype) for f in isa.forms(form.family)}
    types = sorted({f.atype for f in isa.forms(form.family)})
    bad = [t for t in types if (form.atype, t) not in pairs]
    if not bad:
        return None
    b = bad[choice % len(bad)]
    parts = _opcode_parts(ins.opcode)
    # the B type is the last type modifier (before any .and.popc suffix)
    j = max(i for i, x in enumerate(parts) if x == form.btype)
    parts[j] = b
    return _replace_instr(p, idx, replace(ins, opcode=".".join(parts)))


_IMM_ROLES = ("imm_scale_a", "imm_scale_b", "imm_trans_b", "imm_trans_a", "scale_d")


def _imm_out_of_range(p: Program, choice: int) -> Program | None:
    body = _body(p)
    cands = []
    for idx in _mmas(body):
        form = isa.form_for(body[idx])
        for role in _IMM_ROLES:
            if form.has_operand(role):
                k = [o.role for o in form.operands].index(role)
                if isinstance(body[idx].operands[k], Imm):
                    cands.append((idx, role))
    pick = _pick(cands, choice)
    if pick is None:
        return None
    idx, role = pick
    value = 0 if role.startswith("imm_scale") else 2  # scale in {-1, 1}; trans, scale-d in {0, 1}
    return _replace_instr(p, idx, _set_operand(body[idx], role, Imm.of(value)))


def _register_count(p: Program, choice: int) -> Program | None:
    body = _body(p)
    idx = _pick(_mmas(body), choice)
    if idx is None:
        return None
    d = body[idx].operands[0]
    return _replace_instr(p, idx, _set_operand(body[idx], "d", Vec(d.items[:-1])))


def _register_type(p: Program, choice: int) -> Program | None:
    body = _body(p)
    idx = _pick(_mmas(body), choice)
    if idx is None:
        return None
    d = body[idx].operands[0]
    bad = Reg("%fz_bad16")
    new = _set_operand(body[idx], "d", Vec((bad,) + d.items[1:]))
    body[idx] = new
    return _with_body(p, _declare(body, ".b16", bad.name))


def _trans_forbidden(p: Program, choice: int) -> Program | None:
    body = _body(p)
    cands = [i for i in _mmas(body) if not isa.form_for(body[i]).has_operand("imm_trans_b")]
    idx = _pick(cands, choice)
    if idx is None:
        return None
    return _replace_instr(p, idx, replace(body[idx], operands=body[idx].operands + (Imm.of(0),)))


def _sparse_selector(p: Program, choice: int) -> Program | None:
    body = _body(p)
    cands = [i for i in _mmas(body) if isa.form_for(body[i]).has_operand("sp_sel")]
    idx = _pick(cands, choice)
    if idx is None:
        return None
    return _replace_instr(p, idx, _set_operand(body[idx], "sp_sel", Imm.of(4 + choice % 4)))


def _ptx_version(p: Program, choice: int) -> Program | None:
    if not _mmas(_body(p)):
        return None
    return replace(p, module=replace(p.module, version=("7.8", "7.0")[choice % 2]))


def _target(p: Program, choice: int) -> Program | None:
    if not _mmas(_body(p)):
        return None
    return replace(p, module=replace(p.module, target="sm_90"))


# ------------------------------------------------------------------ spec rules (undefined behaviour)


def _missing_fence(p: Program, choice: int) -> Program | None:
    body = _body(p)
    fences = _find(body, lambda s: s.opcode == FENCE)
    if not fences:
        return None
    del body[fences[0]]
    return _with_body(p, body)


def _no_wait(p: Program, choice: int) -> Program | None:
    body = _body(p)
    waits = _find(body, lambda s: s.opcode == WAIT)
    if not waits or not _mmas(body):
        return None
    return _with_body(p, [s for i, s in enumerate(body) if i not in set(waits)])


def _acc_write_in_flight(p: Program, choice: int) -> Program | None:
    """A register write to an accumulator between its wgmma and the commit."""
    body = _body(p)
    idx = _pick([i for i in _mmas(body) if _always_reached(body, i)], choice)
    if idx is None:
        return None
    reg = body[idx].operands[0].items[0]
    return _with_body(p, body[: idx + 1] + [Instr("mov.b32", (reg, Imm.of(0)))] + body[idx + 1:])


def _a_write_in_flight(p: Program, choice: int) -> Program | None:
    """A register write to an A fragment after its wgmma, before any wait."""
    body = _body(p)
    cands = [i for i in _mmas(body) if isinstance(body[i].operands[1], Vec) and _always_reached(body, i)]
    idx = _pick(cands, choice)
    if idx is None:
        return None
    reg = body[idx].operands[1].items[0]
    return _with_body(p, body[: idx + 1] + [Instr("mov.b32", (reg, Imm.of(0)))] + body[idx + 1:])


def _lane_predicate(body: list) -> tuple[list, Reg]:
    """Declare and compute ``%fz_lane < 16`` (true for half of every warp) after the tid read."""
    body = _declare(_declare(body, ".pred", "%fz_div"), ".b32", "%fz_lane")
    first = next(i for i, s in enumerate(body) if isinstance(s, Instr))
    p = Reg("%fz_div")
    code = [Instr("mov.u32", (Reg("%fz_lane"), Reg("%laneid"))),
            Instr("setp.lt.u32", (p, Reg("%fz_lane"), Imm.of(16)))]
    return body[:first] + code + body[first:], p


def _divergent_stage(p: Program, choice: int) -> Program | None:
    """The first stage (fence .. commit) under a lane-dependent branch.

    Measured: ptxas 13.0.88 accepts it with no C7520 (sometimes C7518/C7509 only).
    """
    body = _body(p)
    fences = _find(body, lambda s: s.opcode == FENCE)
    if not fences:
        return None
    body, pred = _lane_predicate(body)
    start = _find(body, lambda s: s.opcode == FENCE)[0]
    end = next(i for i in range(start, len(body)) if isinstance(body[i], Instr) and body[i].opcode == COMMIT)
    label = "$fz_skip"
    body = (body[:start] + [Instr("bra", (Sym(label),), Guard(pred))] + body[start: end + 1]
            + [Label(label)] + body[end + 1:])
    return _with_body(p, body)


def _last_in_stage(body: list) -> list[int]:
    """wgmma.mma_async instructions followed directly by their stage's commit_group."""
    return [i for i in _mmas(body) if i + 1 < len(body) and isinstance(body[i + 1], Instr)
            and body[i + 1].opcode == COMMIT]


def _exited_before(body: list, i: int) -> bool:
    """No thread reaches ``body[i]``: an earlier ``@P exit`` (or ``ret``) let out every thread for
    which a later forward branch on the same, unchanged ``P`` falls through to it -- a role's
    region after that role's warpgroup left (early_exit).  ptxas sees it and deletes the region
    (found by a campaign: a divergent_guard label on such a wgmma, ptxas silent)."""
    labels = {s.name: k for k, s in enumerate(body) if isinstance(s, Label)}
    for k, s in enumerate(body[:i]):
        if not (isinstance(s, Instr) and s.base in ("exit", "ret") and s.guard is not None):
            continue
        reg, sense = s.guard.reg.name, s.guard.negated
        for j in range(k + 1, i):
            b = body[j]
            if not isinstance(b, Instr):
                continue
            if b.operands and isinstance(b.operands[0], Reg) and b.operands[0].name == reg and b.base != "bra":
                break  # the predicate is set again: no longer the one that exited
            if (b.base == "bra" and b.guard is not None and b.guard.reg.name == reg and b.guard.negated != sense
                    and b.operands and isinstance(b.operands[0], Sym) and labels.get(b.operands[0].name, -1) > i
                    and not _entered_from_outside(body, labels, j, labels[b.operands[0].name])):
                return True  # falls through to body[i] only where the exit fired
    return False


def _entered_from_outside(body: list, labels: dict, j: int, end: int) -> bool:
    """Some branch outside ``body[j:end]`` (a branch and the region it skips) targets a label
    inside it: a way in that does not pass the branch."""
    inside = {name for name, k in labels.items() if j < k < end}
    return any(isinstance(s, Instr) and s.base in ("bra", "brx") and not j <= k < end
               and any(isinstance(o, Sym) and o.name in inside for o in s.operands)
               for k, s in enumerate(body))


def _divergent_guard(p: Program, choice: int) -> Program | None:
    """The last wgmma.mma_async of the last stage any thread reaches, guarded by a lane-dependent
    predicate.

    Measured: ptxas prints C7520 for a guarded wgmma right before the commit, but
    nothing when an unguarded wgmma on the same accumulators follows it, or when a later
    stage reuses them before any wait.
    """
    body = _body(p)
    if not [i for i in _last_in_stage(body) if not _exited_before(body, i)]:
        return None
    body, pred = _lane_predicate(body)
    # the last live stage: no later wgmma reads its accumulators first (a later one nobody reaches is gone)
    idx = [i for i in _last_in_stage(body) if not _exited_before(body, i)][-1]
    body[idx] = replace(body[idx], guard=Guard(pred))
    return _with_body(p, body)


def _path_flag(p: Program, name: str) -> tuple[Program, list, Reg]:
    """A new ``.u32`` kernel parameter (value 1) and the code that turns it into a predicate."""
    i, fn = _kernel(p)
    fn = replace(fn, params=fn.params + (Param(".param", ".u32", name),))
    items = list(p.module.items)
    items[i] = fn
    p = replace(p, module=replace(p.module, items=tuple(items)), scalars=p.scalars + ((name, 1),))
    r, pred = Reg(f"%{name}_v"), Reg(f"%{name}")
    code = [Instr("ld.param.u32", (r, Addr(Sym(name)))), Instr("setp.ne.u32", (pred, r, Imm.of(0)))]
    return p, code, pred


def _skip_over(p: Program, index_of, label: str) -> Program | None:
    """Jump over one instruction on the path a uniform kernel parameter (value 1) selects."""
    if index_of(_body(p)) is None:
        return None
    p, code, pred = _path_flag(p, label.strip("$"))
    body = _declare(_declare(_body(p), ".pred", pred.name), ".b32", pred.name + "_v")
    idx = index_of(body)
    jump = Instr("bra.uni", (Sym(label),), Guard(pred))
    return _with_body(p, body[:idx] + code + [jump, body[idx], Label(label)] + body[idx + 1:])


# the labels ``_skip_over`` jumps to: a run is undefined only if it takes such a jump
PATH_LABELS = ("$fz_nowait", "$fz_nofence")


def path_jump_lines(p: Program) -> list[int]:
    """Source lines of a path mutation's jumps (a program parsed from its text has them): the
    reference sees the undefined behaviour only on a run that takes one (the differ asks)."""
    return [s.loc.line for s in walk(_kernel(p)[1].body or ()) if isinstance(s, Instr) and s.base == "bra"
            and s.loc is not None and s.operands and isinstance(s.operands[0], Sym) and s.operands[0].name in PATH_LABELS]


def site_lines(p: Program, name: str) -> list[int] | None:
    """Source lines of the instructions a site mutation made undefined (a program parsed from its
    text has them), or None for a mutation with no site.  The reference sees the undefined
    behaviour only on a run that reaches one; a kernel's branches can skip it on this launch in
    ways a static look misses (a warpgroup-role branch with one warpgroup launched), so the
    differ asks the run."""
    m = BY_NAME.get(name)
    if m is None or m.site is None:
        return None
    body = [s for s in walk(_kernel(p)[1].body or ()) if isinstance(s, Instr)]
    return [s.loc.line for s in m.site(body) if s.loc is not None] or None


def _written_after_wgmma(operand: int):
    """Sites of a write in flight: ``mov.b32 R, 0`` right after a wgmma whose operand ``operand``
    (0: accumulators, 1: A fragments) starts with R."""
    def site(body: list) -> list:
        return [s for prev, s in zip(body, body[1:]) if prev.opcode.startswith(WGMMA_PREFIX)
                and s.opcode == "mov.b32" and len(s.operands) == 2 and isinstance(s.operands[1], Imm)
                and s.operands[1].value == 0 and isinstance(prev.operands[operand], Vec)
                and prev.operands[operand].items[:1] == (s.operands[0],)]
    return site


def _lane_guarded_wgmmas(body: list) -> list:
    return [s for s in body if s.opcode.startswith(WGMMA_PREFIX) and s.guard is not None
            and s.guard.reg.name == "%fz_div"]


def _moved_descriptor_readers(body: list) -> list:
    """The wgmma that first reads each moved descriptor (``add.s64 d, d, IMM`` right after its or.b64)."""
    out = []
    for i, (prev, s) in enumerate(zip(body, body[1:])):
        if prev.opcode == "or.b64" and s.opcode == "add.s64" and isinstance(s.operands[2], Imm) \
                and s.operands[0] == s.operands[1] == prev.operands[0]:
            reader = next((w for w in body[i + 2:] if w.opcode.startswith(WGMMA_PREFIX)
                           and s.operands[0] in w.operands[1:3]), None)
            if reader is not None:
                out.append(reader)
    return out


def _wait_skipped_on_a_path(p: Program, choice: int) -> Program | None:
    """A uniform branch over the last wait_group: the accumulators are then read in flight.

    Only where that wait is the one wait after the last wgmma: an earlier wait on the path the
    run takes (inside a taken branch, say) would already have waited, and the label would lie
    (found by a campaign: the reference ran such a mutant fully defined).
    Measured: ptxas 13.0.88 mostly prints C7517 but not always, so the label is "accepted".
    """
    def last_wait(body):
        mm = _mmas(body)
        waits = [w for w in _find(body, lambda s: s.opcode == WAIT) if mm and w > mm[-1]]
        return waits[0] if len(waits) == 1 else None

    return _skip_over(p, last_wait, PATH_LABELS[0])


def _fence_skipped_on_a_path(p: Program, choice: int) -> Program | None:
    """A uniform branch over the first wgmma.fence: one path reaches the first wgmma unfenced."""
    return _skip_over(p, lambda body: (_find(body, lambda s: s.opcode == FENCE) or [None])[0], PATH_LABELS[1])


def _descriptor_defs(body: list) -> list[tuple[int, int]]:
    """(index, constant) of each ``or.b64 desc, desc, CONST`` that sets descriptor fields of a
    descriptor some later wgmma reads (a program may build one that no wgmma takes: breaking
    that one would break nothing, and the label would lie)."""
    out = []
    for i, s in enumerate(body):
        if isinstance(s, Instr) and s.opcode == "or.b64" and isinstance(s.operands[2], Imm) \
                and _read_by_a_later_wgmma(body, i, s.operands[0]):
            out.append((i, int(s.operands[2].value)))
    return out


def _read_by_a_later_wgmma(body: list, i: int, reg) -> bool:
    """Some wgmma that every launch runs reads descriptor ``reg`` as ``body[i]`` left it."""
    for k, s in enumerate(body[i + 1:], i + 1):
        if isinstance(s, Instr):
            if s.opcode.startswith("wgmma.mma_async") and reg in s.operands[1:3]:
                return _always_reached(body, k)
            if s.operands and s.operands[0] == reg and not s.opcode.startswith(("st.", "wgmma")):
                if s.opcode.startswith(("add.", "and.", "or.")) and reg in s.operands[1:]:
                    continue  # a field set in place: still the same descriptor
                return False  # redefined before any wgmma read it
    return False


def _descriptor_misaligned(p: Program, choice: int) -> Program | None:
    """A swizzled descriptor (base offset 0) moved one 128-byte line: the pattern no longer starts aligned."""
    body = _body(p)
    cands = [(i, c) for i, c in _descriptor_defs(body)
             if descriptor_field(c, SWIZZLE_FIELD) and not descriptor_field(c, BASE_OFFSET_FIELD)]
    pick = _pick(cands, choice)
    if pick is None:
        return None
    i, _ = pick
    d = body[i].operands[0]
    return _with_body(p, body[: i + 1] + [Instr("add.s64", (d, d, Imm.of(descriptor_encode(128))))] + body[i + 1:])


def _smem_out_of_bounds(p: Program, choice: int) -> Program | None:
    """A descriptor some wgmma reads, moved past the end of the kernel's shared memory: its start
    grows by that end (``fuzzptx.ptx.smem``, the H100's layout, module-scope variables included)."""
    body = _body(p)
    cands = _descriptor_defs(body)
    pick = _pick(cands, choice)
    if pick is None:
        return None
    lay = shared_layout(p.module, _kernel(p)[1])
    end = lay.end(p.launch.dynamic_smem)
    if 2 * end > (1 << 18):  # the start field holds 18 address bits: past that it would wrap around
        return None
    i, _ = pick
    d = body[i].operands[0]
    return _with_body(p, body[: i + 1] + [Instr("add.s64", (d, d, Imm.of(-(-end // 16))))] + body[i + 1:])


# ------------------------------------------------------------------ twins of the surrounding code (surround.py)


def _straight(body: list, i: int) -> bool:
    """``body[i]`` runs on every thread that reaches the kernel's straight-line spine: no branch
    jumps over it and no loop contains it (the checker's spec rules see such an instruction as
    run by the whole warp)."""
    labels = {s.name: k for k, s in enumerate(body) if isinstance(s, Label)}
    for k, s in enumerate(body):
        if isinstance(s, Instr) and s.base in ("bra", "brx") and s.operands and isinstance(s.operands[0], Sym):
            t = labels.get(s.operands[0].name)
            if t is not None and ((k < i < t) or (t <= i < k)):
                return False
    return _always_reached(body, i)


def _div_by_zero(p: Program, choice: int) -> Program | None:
    """An integer ``div``/``rem`` of a surrounding construct divides by the constant 0."""
    body = _body(p)
    idx = [i for i in _find(body, lambda s: s.base in ("div", "rem") and (".u32" in s.opcode or ".s32" in s.opcode))
           if _always_reached(body, i)]
    if not idx:
        return None
    i = idx[choice % len(idx)]
    ins = body[i]
    body[i] = replace(ins, operands=ins.operands[:2] + (Imm.of(0),))
    return _with_body(p, body)


_SYNC_MASK_AT = {"shfl": 4, "vote": 2, "match": 2, "redux": 2}


def _outside_membermask(p: Program, choice: int) -> Program | None:
    """A warp collective (``shfl``/``vote``/``match``/``redux.sync``) that every lane runs leaves
    lane 0 out of its membermask."""
    body = _body(p)
    idx = [i for i in _find(body, lambda s: s.base in _SYNC_MASK_AT and "sync" in s.opcode and s.guard is None)
           if _straight(body, i)]
    if not idx:
        return None
    i = idx[choice % len(idx)]
    ins = body[i]
    at = _SYNC_MASK_AT[ins.base]
    ops = list(ins.operands)
    ops[at] = Imm(0xFFFFFFFE, "0xfffffffe")
    body[i] = replace(ins, operands=tuple(ops))
    return _with_body(p, body)


def _carry_in_undefined(p: Program, choice: int) -> Program | None:
    """The first ``add.cc`` of a carry chain becomes a plain ``add``: the ``addc`` after it reads a
    CC.CF nothing wrote."""
    body = _body(p)
    idx = _find(body, lambda s: s.base == "add" and ".cc" in s.opcode)
    if not idx or not _always_reached(body, idx[0]):
        return None
    i = idx[0]
    body[i] = replace(body[i], opcode=body[i].opcode.replace(".cc", ""))
    return _with_body(p, body)


MUTATIONS: tuple[Mutation, ...] = (
    Mutation("bad_shape", "isa.wgmma.shape", "illegal", "rejected", _bad_shape),
    Mutation("type_mix", "isa.wgmma.types", "illegal", "rejected", _type_mix),
    Mutation("imm_out_of_range", "isa.imm", "illegal", "rejected", _imm_out_of_range),
    Mutation("register_count", "isa.operands.vector-size", "illegal", "rejected", _register_count),
    Mutation("register_type", "isa.reg.type", "illegal", "rejected", _register_type),
    Mutation("trans_forbidden", "isa.operands.count", "illegal", "rejected", _trans_forbidden),
    Mutation("sparse_selector", "isa.imm", "illegal", "rejected", _sparse_selector),
    Mutation("ptx_version", "isa.version", "illegal", "rejected", _ptx_version),
    Mutation("target", "isa.target", "illegal", "rejected", _target),
    Mutation("missing_fence", "spec.fence.missing", "undefined", "accepted C7519", _missing_fence),
    Mutation("fence_skipped_on_a_path", "spec.fence.missing", "undefined", "accepted C7519", _fence_skipped_on_a_path),
    Mutation("no_wait", "spec.async.access-in-flight", "undefined", "accepted C7517", _no_wait),
    Mutation("acc_write_in_flight", "spec.async.access-in-flight", "undefined", "accepted", _acc_write_in_flight,
             site=_written_after_wgmma(0)),
    Mutation("a_write_in_flight", "spec.async.access-in-flight", "undefined", "accepted", _a_write_in_flight,
             site=_written_after_wgmma(1)),
    Mutation("divergent_stage", "spec.aligned.divergent", "undefined", "accepted", _divergent_stage),
    Mutation("divergent_guard", "spec.aligned.divergent", "undefined", "accepted C7520", _divergent_guard,
             site=_lane_guarded_wgmmas),
    Mutation("wait_skipped_on_a_path", "spec.async.access-in-flight", "undefined", "accepted", _wait_skipped_on_a_path),
    # (the H100 model computes a misaligned pattern by the hardware's phase formula,
    # tests/hw_records/dense_wgmma_base_offset_explore.json)
    Mutation("descriptor_misaligned", "spec.desc.base-offset", "undefined", "accepted", _descriptor_misaligned,
             site=_moved_descriptor_readers, hardware_defined=True),
    Mutation("smem_out_of_bounds", "spec.smem.out-of-bounds", "undefined", "accepted", _smem_out_of_bounds,
             site=_moved_descriptor_readers),
    # the surrounding code's twins (strategies/surround.py): last, so the ones above keep their indices
    Mutation("div_by_zero", "spec.scalar.div-by-zero", "undefined", "accepted", _div_by_zero),
    Mutation("outside_membermask", "spec.scalar.outside-membermask", "undefined", "accepted", _outside_membermask),
    Mutation("carry_in_undefined", "spec.scalar.carry-in-undefined", "undefined", "accepted", _carry_in_undefined),
)
#: The mainloop kernels' illegal twins (strategies/mainloops.py draws them whole, so ``apply`` is
#: never one of theirs): named here so ``mutation_of`` and the differ read their labels.
MAINLOOP_MUTATIONS = tuple(
    Mutation(twin_name(fault), rule or "", "undefined", "accepted", lambda p, c: None)
    for fault, rule in TWIN_RULES.items())
#: The tensor-copy kernels' twins (strategies/tensor_copies.py), likewise drawn whole, each labelled
#: with the rule it breaks (``tensor_copies.TWIN_RULES``).
TENSOR_MUTATIONS = tuple(Mutation(tensor_copies.twin_name(f), tensor_copies.TWIN_RULES[f], "undefined", "accepted",
                                  lambda p, c: None) for f in tensor_copies.FAULTS)
BY_NAME = {m.name: m for m in MUTATIONS + MAINLOOP_MUTATIONS + TENSOR_MUTATIONS}


def apply(mutation: Mutation | str, program: Program, choice: int = 0) -> Program | None:
    """The mutant with its expectations and a note naming the mutation; None where it does not apply."""
    m = BY_NAME[mutation] if isinstance(mutation, str) else mutation
    out = m.apply(program, choice)
    if out is None:
        return None
    return replace(out, expect=m.expect(), notes=out.notes + (f"mutation: {m.name} breaks {m.rule}",))


def mutation_of(program: Program) -> Mutation | None:
    """The mutation a program's notes name (None for a legal program)."""
    for n in program.notes:
        mm = re.match(r"mutation: (\S+)", n)
        if mm:
            return BY_NAME[mm.group(1)]
    return None


@st.composite
def mutated(draw, programs: st.SearchStrategy[Program], names: tuple[str, ...] | None = None) -> Program:
    """A program from ``programs`` broken by one applicable mutation (of ``names``, or any)."""
    prog = draw(programs)
    choice = draw(st.integers(0, 7))
    pool = [BY_NAME[n] for n in names] if names else list(MUTATIONS)
    order = draw(st.permutations(range(len(pool))))
    for k in order:
        out = apply(pool[k], prog, choice)
        if out is not None:
            event(f"mutation={pool[k].name}")
            return out
    from hypothesis import reject

    reject()


def illegal_programs(names: tuple[str, ...] | None = None,
                     avoid: frozenset[str] = frozenset()) -> st.SearchStrategy[Program]:
    """Illegal programs: wgmma programs broken by one named mutation, and the mainloop and
    tensor-copy kernels' illegal twins (``MAINLOOP_MUTATIONS``, ``TENSOR_MUTATIONS``; with
    ``names``, those named; ``avoid``: shapes of known bugs the wgmma programs turn down)."""
    loops = tuple(m.name for m in MAINLOOP_MUTATIONS if names is None or m.name in names)
    copies = tuple(m.name for m in TENSOR_MUTATIONS if names is None or m.name in names)
    rest = None if names is None else tuple(n for n in names if n not in loops + copies)
    kinds = []
    if loops:
        kinds.append(illegal_mainloop_programs(tuple(fault_of(n) for n in loops)))
    if copies:
        kinds.append(tensor_copies.illegal_tensor_copy_programs(tuple(tensor_copies.fault_of(n) for n in copies)))
    if not kinds:
        return mutated(wgmma_programs(avoid=avoid), rest)
    tw = kinds[0] if len(kinds) == 1 else st.integers(0, len(kinds) - 1).flatmap(lambda i: kinds[i])
    if names is not None and not rest:
        return tw
    # the mutations' programs 7 draws in 8 (seven twin kinds beside ~25 mutations: about their
    # share of kinds), chosen by a flatmap rather than a nested one_of, which Hypothesis would
    # flatten into an outer ``st.one_of(legal, illegal_programs())`` and so shrink its legal half
    mut = mutated(wgmma_programs(avoid=avoid), rest)
    return st.integers(0, TWIN_WEIGHT).flatmap(lambda i: tw if i == TWIN_WEIGHT else mut)


TWIN_WEIGHT = 7


__all__ = ["Mutation", "MUTATIONS", "MAINLOOP_MUTATIONS", "TENSOR_MUTATIONS", "SERIALISED", "verdict_holds", "BY_NAME", "apply", "mutated",
           "illegal_programs", "mutation_of"]
