"""Metamorphic pairs: two programs (or two builds of one) the PTX spec says must compute the same bytes.

Three relations, each a pure function of the program IR (docs/metamorphic.md says why each is sound):

* ``opt-level``   the same PTX text assembled with ``ptxas -O3`` and ``-O0``;
* ``serialise``   a pipelined program and its serialised form (every ``wgmma.mma_async`` in
  its own ``wgmma.fence`` / ``commit_group`` / ``wait_group 0``, so none is in flight across another);
* ``dead-branch`` a program and the same program with branches on warpgroup-uniform,
  always-false predicates jumping over junk code that would change an output if it ran.

``compare_pair`` runs both sides through a judge that returns output bytes (the GPU, or the
reference as its CPU stand-in) and names a disagreement in the differ's convention,
``<judge>:<left>!=<right>|<what>|<family>``: e.g. ``hardware:O3!=O0|mismatch|wgmma.f32.f16``.
Only programs the spec defines take part (``spec_defined``); elements the spec leaves free
are masked out of the comparison.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from .finding import Finding
from .programs import as_judged, program_family
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Addr, Function, Guard, Imm, Instr, Label, Param, Reg, RegDecl, Scope, Statement, Sym, VarDecl, Directive
from fuzzptx.ptx.ir import walk
from fuzzptx.data import element_bytes
from fuzzptx.oracles.checker import check_module
from fuzzptx.oracles.reference import run_program
from fuzzptx.oracles.reference.values import UNDEF
from fuzzptx.oracles.reference import formats as F
from fuzzptx.oracles.hardware import HardwareWorker
from fuzzptx.oracles.reference.errors import Unsupported
from fuzzptx.oracles.ptxas import compile_parallel
from fuzzptx.oracles.ptxas import compile_ptx
from fuzzptx.oracles.hardware import HwResult
from fuzzptx.oracles.ptxas import compile_batch

FENCE = "wgmma.fence.sync.aligned"
COMMIT = "wgmma.commit_group.sync.aligned"
WAIT = "wgmma.wait_group.sync.aligned"

#: relation -> (left side name, right side name). Names are part of the finding signatures: keep them.
RELATIONS: dict[str, tuple[str, str]] = {
    "opt-level": ("O3", "O0"),
    "serialise": ("pipelined", "serialised"),
    "dead-branch": ("plain", "deadbranch"),
}
#: a deliberately wrong "serialisation" (loses one wgmma): the end-to-end self-test of a judge
PLANTED = ("planted", ("pipelined", "planted"))

DEAD_PARAM = "mmx_dead"  # the always-zero kernel parameter the dead branches test
_PREFIX = "%mmx_"


@dataclass(frozen=True)
class Side:
    """One side of a pair: a program and the ptxas optimisation level it is built with."""

    name: str
    program: Program
    opt_level: int = 3


@dataclass(frozen=True)
class Variant:
    """A metamorphic pair: ``left`` and ``right`` must produce the same output bytes."""

    relation: str
    left: Side
    right: Side

    @property
    def pair(self) -> str:
        return f"{self.left.name}!={self.right.name}"


# ------------------------------------------------------------------ transforms


def _is_mma(ins: Statement) -> bool:
    return isinstance(ins, Instr) and ins.opcode.startswith("wgmma.mma_async")


def _map_bodies(fn: Function, f: Callable[[tuple[Statement, ...]], tuple[Statement, ...]]) -> Function:
    """``f`` applied to the function body and to every ``{ }`` scope in it, innermost first."""
    def go(body: tuple[Statement, ...]) -> tuple[Statement, ...]:
        inner = tuple(replace(s, body=go(s.body)) if isinstance(s, Scope) else s for s in body)
        return f(inner)

    return fn if fn.body is None else replace(fn, body=go(fn.body))


def _map_functions(program: Program, f: Callable[[Function], Function]) -> Program:
    items = tuple(f(i) if isinstance(i, Function) else i for i in program.module.items)
    return replace(program, module=replace(program.module, items=items))


def serialise(program: Program) -> Program:
    """Every ``wgmma.mma_async`` fenced before, and committed and waited for (``wait_group 0``) after.

    Pure insertion: the program's own fences, commits and waits stay (a commit of no wgmma
    makes an empty group, a wait for groups already complete returns at once), so every
    path keeps its instructions in order and only loses the overlap between wgmmas.
    """
    def body(stmts: tuple[Statement, ...]) -> tuple[Statement, ...]:
        out: list[Statement] = []
        for s in stmts:
            if _is_mma(s):
                out += [Instr(FENCE), s, Instr(COMMIT), Instr(WAIT, (Imm.of(0),))]
            else:
                out.append(s)
        return tuple(out)

    return _map_functions(program, lambda fn: _map_bodies(fn, body))


def _kernel_without(program: Program, drop: Callable[[Instr], bool]) -> Program:
    """The launched kernel without the instructions ``drop`` picks (asked once per instruction, in text order)."""
    fn = program.module.function(program.launch.kernel)

    def go(body: tuple[Statement, ...]) -> tuple[Statement, ...]:
        out: list[Statement] = []
        for s in body:
            if isinstance(s, Scope):
                out.append(replace(s, body=go(s.body)))
            elif not (isinstance(s, Instr) and drop(s)):
                out.append(s)
        return tuple(out)

    fn2 = replace(fn, body=go(fn.body or ()))
    items = tuple(fn2 if it is fn else it for it in program.module.items)
    return replace(program, module=replace(program.module, items=items))


def drop_wgmma(program: Program, k: int = -1) -> Program:
    """A planted *wrong* serialisation: the kernel's ``k``-th ``wgmma.mma_async`` (text order; -1 the
    last) removed, then serialised. A judge that sees no difference where the reference does is blind."""
    n = sum(1 for i in program.module.function(program.launch.kernel).instructions() if _is_mma(i))
    if n == 0:
        return program
    want, seen = k % n, [-1]

    def drop(ins: Instr) -> bool:
        if not _is_mma(ins):
            return False
        seen[0] += 1
        return seen[0] == want

    return serialise(_kernel_without(program, drop))


def planted_variant(program: Program, defined: dict[str, np.ndarray] | None = None, tries: int = 4) -> Variant | None:
    """The planted pair (``PLANTED``): pipelined vs a serialisation that lost one wgmma, choosing
    (last first, at most ``tries``) a wgmma whose loss the reference sees in a defined output
    element, so that a GPU judge which misses it is blind, not unlucky. None if no such wgmma."""
    n = sum(1 for i in program.module.function(program.launch.kernel).instructions() if _is_mma(i))
    ref = ReferenceJudge()
    base = ref.run(program, 3)
    if base.fault:
        return None
    for k in range(1, min(n, tries) + 1):
        wrong = drop_wgmma(program, -k)
        o = ref.run(wrong, 3)
        if not o.fault and first_difference(program, base.outputs, o.outputs, defined) is not None:
            return Variant(PLANTED[0], Side(PLANTED[1][0], program), Side(PLANTED[1][1], wrong))
    return None


def _open_stage_points(body: tuple[Statement, ...]) -> list[bool]:
    """For each top-level index i: is a wgmma stage open just before statement i?

    A stage opens at a ``wgmma.fence`` or ``wgmma.mma_async`` and closes at ``commit_group``;
    a dead branch never goes inside one, so it cannot separate a wgmma from its fence or commit.
    """
    open_ = False
    out = []
    for s in body:
        out.append(open_)
        for ins in (walk((s,)) if isinstance(s, Scope) else (s,)):
            if isinstance(ins, Instr):
                if ins.opcode.startswith((FENCE, "wgmma.mma_async")):
                    open_ = True
                elif ins.opcode.startswith(COMMIT):
                    open_ = False
    return out


def _first_code_index(body: tuple[Statement, ...]) -> int:
    """Index of the first statement that is not a declaration (where the setup code goes)."""
    for i, s in enumerate(body):
        if not isinstance(s, (RegDecl, VarDecl, Directive)):
            return i
    return len(body)


def _junk(k: int, pred: Reg, label: str, target: tuple[str, int] | None, value: int) -> list[Statement]:
    """``@!pred bra.uni label`` over code that would overwrite an output word (``target``: the
    buffer parameter and byte offset) if it ran.

    ``pred`` is always false, so the branch is always taken and the junk is dead."""
    j = Reg(f"{_PREFIX}j{k}")
    code: list[Statement] = [
        Instr("bra.uni", (Sym(label),), Guard(pred, negated=True)),
        Instr("mov.u32", (j, Imm(value, hex(value)))),
        Instr("xor.b32", (j, j, Imm.of(0x55))),
    ]
    if target is not None:
        a = Reg(f"{_PREFIX}a{k}")
        code += [Instr("ld.param.u64", (a, Addr(Sym(target[0])))),
                 Instr("cvta.to.global.u64", (a, a)),
                 Instr("st.global.b32", (Addr(a, target[1]), j))]
    return code + [Label(label)]


def _last_exit_point(body: tuple[Statement, ...]) -> int:
    """Just before the last top-level unguarded ``ret``/``exit`` (else the end): every path that
    finishes normally passes it after its last store, so junk run there by mistake shows."""
    for i in range(len(body) - 1, -1, -1):
        s = body[i]
        if isinstance(s, Instr) and s.base in ("ret", "exit") and s.guard is None:
            return i
    return len(body)


def dead_branch_points(program: Program) -> list[int]:
    """Top-level statement indices of the launched kernel where a dead branch may go."""
    fn = program.module.function(program.launch.kernel)
    body = fn.body or ()
    start = _first_code_index(body)
    opened = _open_stage_points(body)
    return [i for i in range(start + 1, len(body) + 1) if i == len(body) or not (opened[i] or _labelled_directive(body[i]))]


def _labelled_directive(s: Statement) -> bool:
    """A ``.callprototype``/``.branchtargets``/``.calltargets`` line: its label must stay right
    before it (junk in between gave "Call target not recognized" on the H100 campaign)."""
    return isinstance(s, Directive) and s.text.startswith((".callprototype", ".branchtargets", ".calltargets"))


def _junk_target(program: Program, names: set[str], element: tuple[str, int] | None) -> tuple[str, int] | None:
    """(buffer parameter, byte offset of a whole 4-byte word) the junk stores to: the word holding
    ``element`` (buffer, element index) when it lies inside the buffer, else the first output's word 0."""
    if element is not None:
        name, idx = element
        b = next((b for b in program.outputs() if b.name == name and name in names), None)
        if b is not None:
            off = idx * element_bytes(b.type) // 4 * 4
            if off + 4 <= b.nbytes:
                return name, off
    outs = [b for b in program.outputs() if b.nbytes >= 4 and b.name in names]
    return (outs[0].name, 0) if outs else None


def with_dead_uniform_branches(program: Program, seed: int, points: int = 3,
                               element: tuple[str, int] | None = None) -> Program:
    """``program`` with up to ``points`` branches on always-false warpgroup-uniform predicates.

    Predicates are ``%mmx_dead != 0`` (a new ``.u32`` kernel parameter, always 0: ptxas cannot
    fold it) or ``%nctaid.x > grid.x`` (false for the program's own launch). Each branch jumps
    over code that stores a junk word into an output (the word holding ``element``, a (buffer,
    index) pair the spec defines, else the first output's first word), so junk run by mistake
    changes the output (one branch always sits before the final ``ret``, after every store).
    Branches go only between top-level statements outside any wgmma stage.
    """
    rng = random.Random(seed)
    fn = program.module.function(program.launch.kernel)
    body = tuple(fn.body or ())
    names = {p.name for p in fn.params}
    if DEAD_PARAM in names:
        raise ValueError(f"kernel {fn.name} already has a parameter {DEAD_PARAM}")
    cands = dead_branch_points(program)
    last = _last_exit_point(body)
    chosen = [last] if last in cands and points > 0 else []
    rest = [c for c in cands if c not in chosen]
    chosen = sorted(chosen + rng.sample(rest, min(points - len(chosen), len(rest))))
    target = _junk_target(program, names, element)
    n = len(chosen)
    flag, nct = Reg(f"{_PREFIX}flag"), Reg(f"{_PREFIX}nct")
    decls: list[Statement] = [RegDecl(".b32", (f"{_PREFIX}flag", f"{_PREFIX}nct") + tuple(f"{_PREFIX}j{k}" for k in range(n)))]
    if target is not None and n:
        decls.append(RegDecl(".b64", tuple(f"{_PREFIX}a{k}" for k in range(n))))
    if n:
        decls.append(RegDecl(".pred", tuple(f"{_PREFIX}p{k}" for k in range(n))))
    setup: list[Statement] = [Instr("ld.param.u32", (flag, Addr(Sym(DEAD_PARAM)))),
                              Instr("mov.u32", (nct, Reg("%nctaid.x")))]
    inserts: dict[int, list[Statement]] = {}
    for k, at in enumerate(chosen):
        p = Reg(f"{_PREFIX}p{k}")
        if rng.random() < 0.5:
            test = Instr("setp.ne.u32", (p, flag, Imm.of(0)))
        else:
            test = Instr("setp.gt.u32", (p, nct, Imm.of(program.launch.grid[0])))
        inserts[at] = [test] + _junk(k, p, f"MMX_DEAD{k}", target, rng.randrange(1 << 16, 1 << 31))
    start = _first_code_index(body)
    new: list[Statement] = list(body[:start]) + decls + setup
    for i in range(start, len(body) + 1):
        new += inserts.get(i, [])
        if i < len(body):
            new.append(body[i])
    fn2 = replace(fn, body=tuple(new), params=fn.params + (Param(".param", ".u32", DEAD_PARAM),))
    items = tuple(fn2 if it is fn else it for it in program.module.items)
    return replace(program, module=replace(program.module, items=items),
                   scalars=program.scalars + ((DEAD_PARAM, 0),))


# ------------------------------------------------------------------ which programs, which pairs

#: float arithmetic ptxas may contract (mul+add -> fma) at -O3 but not -O0 unless a rounding
#: modifier is written: a program with one has no opt-level relation (the spec allows both).
_CONTRACTIBLE = ("mul", "add", "sub", "mad", "fma", "neg")
_FLOAT_SUFFIX = (".f16", ".f16x2", ".bf16", ".bf16x2", ".f32", ".f64")
_ROUNDING = ("rn", "rz", "rm", "rp")


def contractible_float_ops(program: Program) -> list[Instr]:
    """Float add/sub/mul/mad without an explicit rounding modifier (ptxas may fuse them)."""
    out = []
    for fn in program.module.functions():
        for ins in fn.instructions():
            if ins.base in _CONTRACTIBLE and ins.opcode.endswith(_FLOAT_SUFFIX) and not set(ins.modifiers) & set(_ROUNDING):
                out.append(ins)
    return out


@dataclass(frozen=True)
class Eligibility:
    """Whether a program takes part (``reason`` says why not) and, per output, the elements the
    spec defines (the comparison skips the others)."""
    reason: str | None
    defined: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.reason is None


def spec_findings(program: Program) -> list[Any]:
    """The checker's ISA and spec-pipeline findings (what makes a program illegal or undefined)."""
    parsed, _ = as_judged(program)
    return check_module(parsed.module, layers=("isa", "spec"), tensormaps=parsed.tensormaps)


def spec_defined(program: Program) -> Eligibility:
    """A program takes part only if the checker finds nothing and the reference (spec numerics)
    runs it to a defined outcome with at least one defined output element."""
    try:
        found = spec_findings(program)
    except Exception as exc:  # a checker crash is the differ's finding, not ours
        return Eligibility(f"checker crashed: {type(exc).__name__}")
    if found:
        return Eligibility("checker: " + ",".join(sorted({f.rule for f in found})))
    parsed, _ = as_judged(program)
    try:
        ref = run_program(parsed, mode="spec")
    except Exception as exc:
        return Eligibility(f"reference: {type(exc).__name__}")
    if ref.undefined:
        return Eligibility(f"reference: undefined ({ref.undefined})")
    defined = {name: o.kind != UNDEF for name, o in ref.outputs.items()}
    if not any(m.any() for m in defined.values()):
        return Eligibility("reference: no output element is defined")
    return Eligibility(None, defined)


def first_defined(program: Program, defined: dict[str, np.ndarray] | None) -> tuple[str, int] | None:
    """The first output element (buffer, index) the spec defines, in header order."""
    for b in program.outputs():
        m = (defined or {}).get(b.name)
        if m is not None and m.any():
            return b.name, int(np.flatnonzero(m)[0])
    return None


def metamorphic_pairs(program: Program, *, seed: int = 0, check: bool = True, planted: bool = False,
                      defined: dict[str, np.ndarray] | None = None) -> list[Variant]:
    """The pairs ``program`` takes part in, each naming its relation (see ``RELATIONS``).

    With ``check`` a transformed side that draws a checker finding the original lacks is dropped
    (for dead branches, other seeds and fewer branches are tried first): a pair is only sound
    when both sides are defined. ``defined`` (``spec_defined(program).defined``) aims the dead
    branches' junk at an element the spec defines. ``planted`` adds the deliberately wrong pair
    (``planted_variant``) where the program has one.
    """
    (o3, o0), (pip, ser_name), (plain, dead_name) = RELATIONS["opt-level"], RELATIONS["serialise"], RELATIONS["dead-branch"]
    base_rules = {f.rule for f in spec_findings(program)} if check else set()

    def sound(variant: Program) -> bool:
        return not check or {f.rule for f in spec_findings(variant)} <= base_rules

    out: list[Variant] = []
    if not contractible_float_ops(program):
        out.append(Variant("opt-level", Side(o3, program, 3), Side(o0, program, 0)))
    if any(_is_mma(i) for fn in program.module.functions() for i in fn.instructions()):
        ser = serialise(program)
        if sound(ser):
            out.append(Variant("serialise", Side(pip, program), Side(ser_name, ser)))
        if planted:
            pv = planted_variant(program, defined)
            if pv is not None:
                out.append(pv)
    element = first_defined(program, defined)
    for attempt in range(4):
        dead = with_dead_uniform_branches(program, seed + attempt, points=3 if attempt < 2 else 1, element=element)
        if sound(dead):
            out.append(Variant("dead-branch", Side(plain, program), Side(dead_name, dead)))
            break
    return out


# ------------------------------------------------------------------ judges


@dataclass(frozen=True)
class Outcome:
    """What a judge got from one side: output bytes, or a fault (``rejected``: ptxas refused it)."""
    outputs: dict[str, bytes] = field(default_factory=dict)
    fault: str | None = None
    rejected: bool = False


class Judge(Protocol):
    """Runs a program built at an opt level and returns its output bytes."""

    name: str
    deterministic: bool

    def run(self, program: Program, opt_level: int) -> Outcome: ...


@dataclass
class ReferenceJudge:
    """The reference interpreter as a CPU stand-in for the GPU (hardware numerics where it has them).

    It ignores the opt level (there is no compiler in it), so on the reference the opt-level
    relation holds trivially; the transforms' relations do not.
    """

    mode: str = "hardware"
    name: str = "reference"
    deterministic: bool = True

    def run(self, program: Program, opt_level: int) -> Outcome:
        parsed, _ = as_judged(program)
        try:
            try:
                ref = run_program(parsed, mode=self.mode)
            except Unsupported:
                ref = run_program(parsed, mode="spec")
        except Exception as exc:
            return Outcome(fault=f"reference: {type(exc).__name__}: {exc}")
        if ref.undefined:
            return Outcome(fault=f"undefined: {ref.undefined}")
        return Outcome({n: o.data for n, o in ref.outputs.items()})


@dataclass
class HardwareJudge:
    """The GPU: ptxas at the side's opt level, then ``oracles.hardware.HardwareWorker``.

    ``prepare`` compiles many sides in ptxas batches first (as campaigns do); ``run`` compiles
    what it has not seen alone.
    """

    worker: Any  # oracles.hardware.HardwareWorker
    name: str = "hardware"
    deterministic: bool = False
    _built: dict = field(default_factory=dict)

    def prepare(self, sides: Sequence[tuple[Program, int]]) -> None:
        by_opt: dict[int, list[str]] = {}
        for program, opt in sides:
            text = program.to_ptx()
            if (text, opt) not in self._built:
                by_opt.setdefault(opt, []).append(text)
        for opt, texts in by_opt.items():
            texts = list(dict.fromkeys(texts))
            for text, res in zip(texts, compile_parallel(texts, opt_level=opt, want_cubin=True)):
                self._built[(text, opt)] = res

    def _compiled(self, program: Program, opt: int):
        text = program.to_ptx()
        if (text, opt) not in self._built:
            self._built[(text, opt)] = compile_ptx(text, arch=program.module.target, opt_level=opt, want_cubin=True)
        return self._built[(text, opt)]

    def run(self, program: Program, opt_level: int) -> Outcome:
        res = self._compiled(program, opt_level)
        if not res.accepted or res.cubin is None:
            first = res.errors()[0].message if res.errors() else res.stderr.strip()[:200]
            return Outcome(fault=f"ptxas -O{opt_level} rejected: {first}", rejected=True)
        hw = self.worker.run(program, cubin=res.cubin, kernel=res.kernel_map().get(program.launch.kernel))
        return Outcome(dict(hw.outputs), hw.fault)


@dataclass
class ReferenceWorker:
    """Stands in for ``oracles.hardware.HardwareWorker`` where there is no GPU (dry runs, tests):
    ``HardwareJudge`` still compiles every side with real ptxas, then this runs the reference."""

    restarts: int = 0
    info: dict = field(default_factory=lambda: {"device": "none: the reference stands in (dry run)"})

    def start(self) -> dict:
        return self.info

    def close(self) -> None:
        pass

    def run(self, program: Program, *, cubin: bytes | None = None, kernel: str | None = None, timeout: float | None = None):
        if not cubin:
            return HwResult({}, "load error: no cubin")
        o = ReferenceJudge().run(program, 3)
        return HwResult(o.outputs, o.fault)


# ------------------------------------------------------------------ comparing


@dataclass(frozen=True)
class Difference:
    buffer: str
    index: int
    left: str
    right: str
    count: int  # differing elements in this buffer
    compared: int  # defined elements compared in all buffers


def _nan_mask(type_: str, bits: np.ndarray) -> np.ndarray:
    if not F.is_float(type_):
        return np.zeros(bits.shape, bool)
    return np.isnan(F.decode(type_, bits))


def first_difference(program: Program, left: dict[str, bytes], right: dict[str, bytes],
                     defined: dict[str, np.ndarray] | None = None) -> Difference | None:
    """The first defined output element whose bits differ (any NaN equals any NaN), or None."""
    compared = 0
    first = None
    for b in program.outputs():
        eb = element_bytes(b.type)
        dt = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[eb]
        lb, rb = left.get(b.name, b""), right.get(b.name, b"")
        if len(lb) < b.count * eb or len(rb) < b.count * eb:
            if first is None and len(lb) != len(rb):
                first = Difference(b.name, -1, f"{len(lb)} bytes", f"{len(rb)} bytes", b.count, 0)
            continue
        lv = np.frombuffer(lb[: b.count * eb], dt)
        rv = np.frombuffer(rb[: b.count * eb], dt)
        mask = defined.get(b.name) if defined else None
        mask = np.ones(b.count, bool) if mask is None else mask
        diff = (lv != rv) & mask & ~(_nan_mask(b.type, lv) & _nan_mask(b.type, rv))
        compared += int(mask.sum())
        if first is None and diff.any():
            i = int(np.flatnonzero(diff)[0])
            first = Difference(b.name, i, f"0x{int(lv[i]):0{2 * eb}x}", f"0x{int(rv[i]):0{2 * eb}x}", int(diff.sum()), 0)
    return None if first is None else replace(first, compared=compared)


def signature(judge: str, variant: Variant, what: str, family: str) -> str:
    """``<judge>:<left>!=<right>|<what>|<family>``, e.g. ``hardware:pipelined!=serialised|mismatch|wgmma.f32.f16``."""
    return f"{judge}:{variant.pair}|{what}|{family}"


def compare_pair(variant: Variant, judge: Judge, *, defined: dict[str, np.ndarray] | None = None,
                 family: str | None = None, cache: dict | None = None) -> Finding | None:
    """Run both sides through ``judge``; a Finding when they disagree, else None.

    Both sides faulting alike is no metamorphic finding (the differ reports faults). On a
    judge that is not ``deterministic`` a mismatch is rerun once: a side that changes on its
    own rerun gives ``<judge>:nondeterministic|<side>|<family>`` instead.
    ``cache`` (text, opt) -> Outcome lets pairs that share a side (the original at -O3) run it once.
    """
    fam = family or program_family(variant.left.program)
    cache = {} if cache is None else cache

    def run(side: Side, fresh: bool = False) -> Outcome:
        key = (side.program.to_ptx(), side.opt_level)
        if fresh or key not in cache:
            cache[key] = judge.run(side.program, side.opt_level)
        return cache[key]

    lo, ro = run(variant.left), run(variant.right)
    base_ev = (("relation", variant.relation), ("left", variant.left.name), ("right", variant.right.name))
    if lo.fault or ro.fault:
        if lo.fault and ro.fault:
            return None
        side, o = (variant.left, lo) if lo.fault else (variant.right, ro)
        what = ("rejected:" if o.rejected else "fault:") + side.name
        return Finding(signature(judge.name, variant, what, fam), f"{side.name} side: {o.fault}; the other side ran",
                       base_ev + (("fault", o.fault),))
    d = first_difference(variant.left.program, lo.outputs, ro.outputs, defined)
    if d is None:
        return None
    if not judge.deterministic:
        for side, o in ((variant.left, lo), (variant.right, ro)):
            again = run(side, fresh=True)
            if again.fault or first_difference(side.program, o.outputs, again.outputs, defined):
                return Finding(f"{judge.name}:nondeterministic|{side.name}|{fam}",
                               f"the {side.name} side of {variant.relation} gave different outputs on a rerun",
                               base_ev + (("side", side.name),))
    return Finding(signature(judge.name, variant, "mismatch", fam),
                   f"{variant.relation}: {d.count} element(s) of {d.buffer} differ; first [{d.index}]: "
                   f"{variant.left.name} {d.left}, {variant.right.name} {d.right}",
                   base_ev + (("buffer", d.buffer), ("index", d.index), ("left_value", d.left),
                              ("right_value", d.right), ("differing", d.count), ("compared", d.compared)))


@dataclass
class Checked:
    """One program's metamorphic run: which relations ran, what was found, why it was skipped."""
    skipped: str | None = None
    relations: list[str] = field(default_factory=list)
    findings: list[tuple[Variant, Finding]] = field(default_factory=list)


def check_program(program: Program, judge: Judge, *, seed: int = 0, planted: bool = False,
                  cache: dict | None = None) -> Checked:
    """Every pair of ``program`` through ``judge`` (nothing when the spec does not define it)."""
    pairs = prepare_pairs(program, seed=seed, planted=planted)
    return pairs if isinstance(pairs, Checked) else pairs.judge(judge, cache=cache)


@dataclass
class PreparedPairs:
    """A program's pairs with every side already compiled (``built``: (text, opt) -> PtxasResult):
    what a campaign's CPU pool hands its GPU workers, so no ptxas runs beside the GPU."""

    variants: list[Variant]
    defined: dict[str, np.ndarray] | None
    family: str
    built: dict = field(default_factory=dict)

    def judge(self, judge: Judge, cache: dict | None = None) -> Checked:
        out = Checked(relations=[v.relation for v in self.variants])
        cache = {} if cache is None else cache
        for v in self.variants:
            f = compare_pair(v, judge, defined=self.defined, family=self.family, cache=cache)
            if f is not None:
                out.findings.append((v, f))
        return out

    def compile(self, known: dict | None = None) -> "PreparedPairs":
        """Compile every side in one ptxas batch per opt level (``known``: results at hand)."""
        from dataclasses import replace as _replace

        def portable(res):  # a plain dict of kernel names, so the result pickles to a GPU worker
            return _replace(res, kernel_names=dict(res.kernel_names))

        self.built.update({k: portable(r) for k, r in (known or {}).items()})
        by_opt: dict[int, list[str]] = {}
        for v in self.variants:
            for side in (v.left, v.right):
                key = (side.program.to_ptx(), side.opt_level)
                if key not in self.built:
                    by_opt.setdefault(side.opt_level, []).append(key[0])
        for opt, texts in by_opt.items():
            texts = list(dict.fromkeys(texts))
            for text, res in zip(texts, compile_batch(texts, opt_level=opt, want_cubin=True)):
                self.built[(text, opt)] = portable(res)
        return self


def prepare_pairs(program: Program, *, seed: int = 0, planted: bool = False) -> "PreparedPairs | Checked":
    """The pairs ``program`` takes part in, ready to judge; a ``Checked`` saying why when none can."""
    el = spec_defined(program)
    if not el.ok:
        return Checked(skipped=el.reason)
    return PreparedPairs(metamorphic_pairs(program, seed=seed, planted=planted, defined=el.defined), el.defined,
                         program_family(program))


def is_metamorphic(sig: str) -> bool:
    """Whether a finding signature is one of this module's (``<judge>:<left>!=<right>|...`` with
    side names from ``RELATIONS``/``PLANTED``, or ``<judge>:nondeterministic|...``)."""
    pair = sig.split("|", 1)[0]
    judge_, _, sides = pair.partition(":")
    names = {f"{l}!={r}" for l, r in list(RELATIONS.values()) + [PLANTED[1]]}
    return bool(judge_) and (sides in names or sides == "nondeterministic")


def keeps(sig: str, judge: Judge, *, seed: int = 0) -> Callable[[Sequence[Program]], list[bool]]:
    """A predicate for ``fuzzptx.reduce.shrink``: which candidates still show a metamorphic finding
    whose signature starts with ``sig`` (judged in order, stopping at the first that does)."""
    planted = PLANTED[1][1] in sig

    def holds(programs: Sequence[Program]) -> list[bool]:
        out = [False] * len(programs)
        for i, program in enumerate(programs):
            found = check_program(program, judge, seed=seed, planted=planted).findings
            if any(f.signature.startswith(sig) for _, f in found):
                out[i] = True
                break
        return out

    return holds


__all__ = [
    "RELATIONS", "PLANTED", "DEAD_PARAM", "Side", "Variant", "serialise", "drop_wgmma", "planted_variant",
    "with_dead_uniform_branches", "dead_branch_points", "contractible_float_ops", "Eligibility",
    "spec_findings", "spec_defined", "first_defined", "metamorphic_pairs", "Outcome", "Judge", "ReferenceJudge",
    "HardwareJudge", "ReferenceWorker", "Difference", "first_difference", "signature", "compare_pair", "Checked", "check_program", "PreparedPairs",
    "prepare_pairs",
    "is_metamorphic", "keeps",
]


def verdict(program: Program, *, on_gpu: bool, worker: Any = None) -> "Checked":
    """The program's metamorphic pairs (this module's) on the GPU when ``on_gpu`` (through
    ``worker``, or a fresh one), else on the reference as its CPU stand-in. A judge that breaks
    says so as a skip, never by losing the program's other verdicts."""
    try:
        if on_gpu:
            if worker is None:

                with HardwareWorker() as w:
                    return check_program(program, HardwareJudge(w))
            return check_program(program, HardwareJudge(worker))
        return check_program(program, ReferenceJudge())
    except Exception as exc:  # noqa: BLE001
        if type(exc).__name__ == "HardwareUnavailable":
            raise
        return Checked(skipped=f"metamorphic judge failed: {type(exc).__name__}: {exc}")
