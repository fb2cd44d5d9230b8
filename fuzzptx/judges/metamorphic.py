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
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from .compile_pairs import (BASE, BASE_NAME, COMPILE_PAIRS, MAXRREG, RELEASE, REPLAY_DEFAULT, TRANSFORMS, Build,
                            maxrreg_build, newest_release, side_names)
from .finding import Finding
from .programs import as_judged, program_family
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Addr, Function, Guard, Imm, Instr, Label, Param, Reg, RegDecl, Scope, Statement, Sym, VarDecl, Directive
from fuzzptx.ptx.ir import walk
from fuzzptx.data import element_bytes
from fuzzptx.oracles.checker import check_module
from fuzzptx.oracles.reference import run_in_numerics
from fuzzptx.oracles.reference.alu import CONTRACTED
from fuzzptx.oracles.reference.values import EXACT, UNDEF
from fuzzptx.oracles.reference import formats as F
from fuzzptx.errors import FuzzptxError
from fuzzptx.oracles.hardware import HardwareWorker, gpu_available
from fuzzptx.oracles.reference.errors import StepLimit, Unsupported
from fuzzptx.oracles.ptxas import compile_parallel
from fuzzptx.oracles.ptxas import compile_ptx
from fuzzptx.oracles import elf
from fuzzptx.oracles.hardware import HwResult
from fuzzptx.oracles.ptxas import ALLOCATION_FAILED, PINNED_VERSION, PtxasResult, compile_batch

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
    """One side of a pair: a program and how ptxas builds it (an int is ``Build(opt_level)``)."""

    name: str
    program: Program
    build: Build = BASE

    def __post_init__(self) -> None:
        if isinstance(self.build, int):
            object.__setattr__(self, "build", Build(self.build))

    @property
    def opt_level(self) -> int:
        return self.build.opt_level

    def key(self) -> tuple:
        """What identifies one run of this side: the code (its module object: the sides of one
        program on other input sets share it, and emitting the text for a key cost more than the
        run), the launch, the build and the input data."""
        return (_Identity(self.program.module), self.program.launch, self.build, _data_key(self.program))


class _Identity:
    """A key part equal only to itself's object (``is``), holding it so its id is never reused."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.obj is self.obj


@dataclass(frozen=True)
class Variant:
    """A metamorphic pair: ``left`` and ``right`` must produce the same output bytes."""

    relation: str
    left: Side
    right: Side

    @property
    def pair(self) -> str:
        return f"{self.left.name}!={self.right.name}"

    def with_inputs(self, k: int) -> "Variant":
        """This pair on input set ``k`` (0: the header's own data)."""
        if k == 0:
            return self
        return Variant(self.relation, replace(self.left, program=reseeded(self.left.program, k)),
                       replace(self.right, program=reseeded(self.right.program, k)))


def _data_key(program: Program) -> tuple:
    return tuple((b.name, b.init, b.seed) for b in program.buffers)


#: buffer contents drawn from a seed (the others are patterns or inline bytes, the same for any seed)
_SEEDED = ("random", "small_int", "special")


def reseeded(program: Program, k: int) -> Program:
    """``program`` on its ``k``-th input set: every seeded buffer drawn again from another seed
    (the launch, patterns and inline data stay): one cubin, several inputs, the GPU busy."""
    if k == 0:
        return program
    bufs = tuple(replace(b, seed=(b.seed * 1000003 + 7919 * k) % (1 << 31)) if b.init in _SEEDED else b
                 for b in program.buffers)
    return replace(program, buffers=bufs)


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
_MODELLED = tuple(f".{t}" for t in CONTRACTED)


def unmodelled_float_ops(ops: list[Instr]) -> list[Instr]:
    """Of contractible float ops, those whose fusion the reference does not allow both ways: packed
    halves, f64 and ``mad`` (``alu.CONTRACTED`` lists the scalar types it does)."""
    return [ins for ins in ops if ins.base == "mad" or not ins.opcode.endswith(_MODELLED)]


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
    spec defines (the comparison skips the others; None: no reference ran, every byte is compared
    once the GPU has shown it deterministic).  ``integer_only``: float outputs are left out of
    the comparison (ptxas may contract float arithmetic differently per build).  ``note``: why
    the reference gave no mask, when it could not run the program."""
    reason: str | None
    defined: dict[str, np.ndarray] | None = field(default_factory=dict)
    integer_only: bool = False
    note: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None


def spec_findings(program: Program) -> list[Any]:
    """The checker's ISA and spec-pipeline findings (what makes a program illegal or undefined)."""
    parsed, _ = as_judged(program)
    return check_module(parsed.module, layers=("isa", "spec"), tensormaps=parsed.tensormaps)


def spec_defined(program: Program, reference: Any = None) -> Eligibility:
    """A program takes part only if the checker finds nothing and the reference (spec numerics)
    runs it to a defined outcome with at least one defined output element.  ``reference``: the
    reference's result (``RefResult``) or the exception it raised, when already at hand."""
    el = pair_eligibility(program, reference)
    if el.ok and el.defined is None:
        return Eligibility(f"reference: {el.note}")
    return el


def pair_eligibility(program: Program, reference: Any = None,
                     taken: Callable[[str], Any] | None = None) -> Eligibility:
    """Whether ``program`` takes part in compile pairs: the checker's ISA and spec layers find
    nothing (the program is defined as far as it can tell).  The reference, where it runs, adds
    its mask of defined elements, or rules the program out when it is undefined; where it cannot
    run (an instruction outside its subset, a launch it cannot follow) the pairs still run, on
    every output byte, and the GPU's determinism check guards them.  Any other error of the reference
    (an out-of-bounds access, a hang) makes the program undefined under its launch: no pairs.

    Float arithmetic ptxas may contract (``contractible_float_ops``) is compared where the reference
    gives its result exactly: it allows both the fused and the unfused result of every such op of
    the types it models (``alu.CONTRACTED``: a bound, not an exact element), and it runs in the
    H100's numerics (``mode="hardware"``: each wgmma has one result) when it runs here.  On the 85
    compiler-made kernels of ``tests/data`` no element so chosen differed between -O3 and -O0 on an
    H200 (``tests/hw_records/kernels_h200.json``), where the float outputs of CUTLASS's and Triton's
    kernels were left out of every pair before.  Contractible ops of other types (packed halves,
    f64, ``mad``), or no reference mask, leave float outputs out as before (``integer_only``).

    ``reference``: the outcome to use whatever its numerics; ``taken``: the outcome of a run already
    taken in a numerics mode (``ReferenceVerdict.outcome``: None where that run was in another mode),
    read before the reference is run here -- a campaign's reference judge has run every program."""
    try:
        found = spec_findings(program)
    except Exception as exc:  # a checker crash is the differ's finding, not ours
        return Eligibility(f"checker crashed: {type(exc).__name__}")
    if found:
        return Eligibility("checker: " + ",".join(sorted({f.rule for f in found})))
    floats = contractible_float_ops(program)
    exact_floats = bool(floats) and not unmodelled_float_ops(floats)
    integer_only = bool(floats) and not exact_floats
    has_int = any(not F.is_float(b.type) for b in program.outputs())
    if integer_only and not has_int:
        return Eligibility("float arithmetic ptxas may contract differently per build, and no integer output")
    ref = reference
    if ref is None:
        mode = "hardware" if exact_floats else "spec"
        ref = taken(mode) if taken is not None else None
        if ref is None:
            parsed, _ = as_judged(program)
            ref = _reference_run(parsed, mode)
    if isinstance(ref, BaseException):
        what = str(ref).splitlines()[0][:160] if str(ref) else ""
        why = f"{type(ref).__name__}: {what}" if what else type(ref).__name__
        if not isinstance(ref, (Unsupported, StepLimit)):
            # an out-of-bounds access, a hang, a read of what was never written: undefined under this
            # launch, on the GPU too -- no build is bound to reproduce the other's bytes
            return Eligibility(f"reference: {why}")
        if floats and not has_int:  # no mask to pick the exact float elements by
            return Eligibility("float arithmetic ptxas may contract differently per build, and no integer output")
        return Eligibility(None, None, bool(floats), why)
    if ref.undefined:
        return Eligibility(f"reference: undefined ({ref.undefined})")
    # every buffer: a float result may be stored through an integer-typed one (its bits moved to .b32)
    defined = {name: (o.kind == EXACT if exact_floats else o.kind != UNDEF) for name, o in ref.outputs.items()}
    if not any(m.any() for m in defined.values()):
        if exact_floats:
            return Eligibility("float arithmetic ptxas may contract differently per build, and no output "
                               "element the reference gives exactly")
        return Eligibility("reference: no output element is defined")
    return Eligibility(None, defined, integer_only)


def _reference_run(program: Program, mode: str) -> Any:
    """The reference's result in ``mode`` (the spec's where the H100 model does not run), or the
    exception it raised."""
    try:
        return run_in_numerics(program, mode)[0]
    except Exception as exc:  # noqa: BLE001 - the reference's limit is not the program's
        return exc


def first_defined(program: Program, defined: dict[str, np.ndarray] | None) -> tuple[str, int] | None:
    """The first output element (buffer, index) the spec defines, in header order."""
    for b in program.outputs():
        m = (defined or {}).get(b.name)
        if m is not None and m.any():
            return b.name, int(np.flatnonzero(m)[0])
    return None


def metamorphic_pairs(program: Program, *, seed: int = 0, check: bool = True, planted: bool = False,
                      defined: dict[str, np.ndarray] | None = None, pairs: Sequence[str] = REPLAY_DEFAULT,
                      release: str | None = None, base_release: str | None = None) -> list[Variant]:
    """The pairs ``program`` takes part in, each naming its relation (see ``RELATIONS``).

    ``pairs``: the names of ``compile_pairs.ALL`` to build (the ``maxrreg`` pair is added by
    ``PreparedPairs.compile`` once the base build's register count is known).  ``release``: the
    release of the ``release`` pair (default: the newest cached one).  ``base_release``: the release
    every other side is built by (None: the pinned one) -- a release matrix's or bisect's row, whose
    compile stage built the base side with that release: each pair then compares two builds of it.

    With ``check`` a transformed side that draws a checker finding the original lacks is dropped
    (for dead branches, other seeds and fewer branches are tried first): a pair is only sound
    when both sides are defined. ``defined`` (``spec_defined(program).defined``) aims the dead
    branches' junk at an element the spec defines. ``planted`` adds the deliberately wrong pair
    (``planted_variant``) where the program has one.
    """
    (pip, ser_name), (plain, dead_name) = RELATIONS["serialise"], RELATIONS["dead-branch"]
    wanted = set(pairs)
    out: list[Variant] = []
    base = base_build(base_release)
    for row in COMPILE_PAIRS:
        if row.name in wanted:
            relation = "opt-level" if row.name in ("O0", "O1", "O2") else "options"
            out.append(Variant(relation, Side(BASE_NAME, program, base),
                               Side(row.name, program, replace(row.build, release=base.release))))
    if RELEASE in wanted:
        rel = release or newest_release()
        if rel is not None and rel != base.release:  # (a row of the newest release has no release pair)
            out.append(Variant("release", Side(base.release or PINNED_VERSION, program, base),
                               Side(rel, program, Build(3, (), rel))))
    if not wanted & set(TRANSFORMS) and not planted:
        return out
    base_rules = {f.rule for f in spec_findings(program)} if check else set()

    def sound(variant: Program) -> bool:
        return not check or {f.rule for f in spec_findings(variant)} <= base_rules

    if any(_is_mma(i) for fn in program.module.functions() for i in fn.instructions()):
        if "serialise" in wanted:
            ser = serialise(program)
            if sound(ser):
                out.append(Variant("serialise", Side(pip, program), Side(ser_name, ser)))
        if planted:
            pv = planted_variant(program, defined)
            if pv is not None:
                out.append(pv)
    if "dead-branch" in wanted:
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
    crashed: bool = False  # ptxas died on this side's build (a signal)


class Judge(Protocol):
    """Runs a program built one way (``Build``) and returns its output bytes."""

    name: str
    deterministic: bool

    def run(self, program: Program, build: Build) -> Outcome: ...


def _as_build(build: "Build | int") -> Build:
    return Build(build) if isinstance(build, int) else build


def base_build(release: str | None) -> Build:
    """The side every compile pair is compared with, built by ``release`` (None, or the pinned
    release named: ``BASE``, the pinned ptxas's -O3)."""
    return BASE if release in (None, PINNED_VERSION) else Build(3, (), release)


@dataclass
class ReferenceJudge:
    """The reference interpreter as a CPU stand-in for the GPU (hardware numerics where it has them).

    It ignores the build (there is no compiler in it), so on the reference every compile pair
    holds trivially; the transforms' relations do not.
    """

    mode: str = "hardware"
    name: str = "reference"
    deterministic: bool = True
    reads_build: bool = False  # one run serves every build of a side

    def run(self, program: Program, build: "Build | int" = BASE) -> Outcome:
        parsed, _ = as_judged(program)
        try:
            ref, _ = run_in_numerics(parsed, self.mode)
        except Exception as exc:
            return Outcome(fault=f"reference: {type(exc).__name__}: {exc}")
        if ref.undefined:
            return Outcome(fault=f"undefined: {ref.undefined}")
        return Outcome({n: o.data for n, o in ref.outputs.items()})


def compile_builds(keys: Sequence[tuple[str, Build]], *, parallel: bool = False) -> dict:
    """(text, build) -> PtxasResult with cubin, one batched ptxas run per build (a release's
    own ptxas for a release build; a release not cached gives a rejection saying so)."""
    by_build: dict[Build, list[str]] = {}
    for text, build in keys:
        by_build.setdefault(build, []).append(text)
    out: dict = {}
    for build, texts in by_build.items():
        texts = list(dict.fromkeys(texts))
        ptxas = build.ptxas()
        if build.release is not None and ptxas is None:
            why = f"ptxas {build.release} is not cached (fuzzptx toolchains --fetch {build.release})"
            for t in texts:
                out[(t, build)] = PtxasResult(False, (), None, 0.0, -1, False, stderr=why)
            continue
        run = compile_parallel if parallel else compile_batch
        for text, res in zip(texts, run(texts, opt_level=build.opt_level, want_cubin=True,
                                         extra_args=build.options, ptxas=ptxas)):
            out[(text, build)] = res
    return out


#: fill patterns for shared memory before the two runs of the determinism check: bytes that
#: follow them were read before any write (or raced), so no build is bound to reproduce them
SCRUB_PATTERNS = (0x00000000, 0xA5A5A5A5)


@dataclass
class HardwareJudge:
    """The GPU: ptxas builds the side, then ``oracles.hardware.HardwareWorker`` runs it.

    ``prepare`` compiles many sides in ptxas batches first (as campaigns do); ``run`` compiles
    what it has not seen alone.  ``determinism`` runs a build twice, shared memory scrubbed
    with another pattern before each run, before any pair is compared.
    """

    worker: Any  # oracles.hardware.HardwareWorker
    name: str = "hardware"
    deterministic: bool = False
    _built: dict = field(default_factory=dict)
    # (id of a module, build) -> (that module, its build): a program on another input set
    # (``reseeded``) shares its module, and its text differs only in the header's seeds, which
    # ptxas never reads; without this each input set compiled every side again
    _by_module: dict = field(default_factory=dict)

    def prepare(self, sides: Sequence[tuple[Program, "Build | int"]]) -> None:
        keys = [(p.to_ptx(), _as_build(b)) for p, b in sides]
        self._built.update(compile_builds([k for k in keys if k not in self._built], parallel=True))

    def _compiled(self, program: Program, build: Build):
        mkey = (id(program.module), build)
        hit = self._by_module.get(mkey)
        if hit is not None and hit[0] is program.module:
            return hit[1]
        key = (program.to_ptx(), build)
        if key not in self._built:
            if build.release is None:
                self._built[key] = compile_ptx(key[0], arch=program.module.target, opt_level=build.opt_level,
                                               want_cubin=True, extra_args=build.options)
            else:
                self._built.update(compile_builds([key]))
        self._by_module[mkey] = (program.module, self._built[key])
        return self._built[key]

    def run(self, program: Program, build: "Build | int" = BASE, scrub: int | None = None) -> Outcome:
        build = _as_build(build)
        res = self._compiled(program, build)
        if not res.accepted or res.cubin is None:
            if res.returncode < 0 and not res.timed_out:  # killed by a signal: a compiler crash, not a rejection
                return Outcome(fault=f"ptxas {build} crashed (signal {-res.returncode})", rejected=True, crashed=True)
            first = res.errors()[0].message if res.errors() else res.stderr.strip()[:200]
            return Outcome(fault=f"ptxas {build} rejected: {first}", rejected=True)
        if scrub is not None and hasattr(self.worker, "scrub"):
            self.worker.scrub(scrub)
        hw = self.worker.run(program, cubin=res.cubin, kernel=res.kernel_map().get(program.launch.kernel))
        return Outcome(dict(hw.outputs), hw.fault)

    def registers(self, program: Program, build: Build = BASE) -> int | None:
        """The registers per thread ptxas gave the launched kernel in this build (from its cubin)."""
        res = self._compiled(program, build)
        if not res.accepted or res.cubin is None:
            return None
        return elf.registers(res.cubin).get(res.kernel_map().get(program.launch.kernel, program.launch.kernel))


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
                     defined: dict[str, np.ndarray] | None = None, integer_only: bool = False) -> Difference | None:
    """The first defined output element whose bits differ (any NaN equals any NaN), or None.
    ``integer_only``: float buffers are not compared."""
    compared = 0
    first = None
    for b in program.outputs():
        if integer_only and F.is_float(b.type):
            continue
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


#: what ptxas says when a register cap is below what the program needs (the maxrreg pair's limit,
#: not a bug: "Insufficient registers" C7601/C7602, "cannot be compiled with specified register
#: target constraints" for an f64 mma under the cap on the H100, the allocator giving up), and a
#: release that is not here
_LIMITS = ("Insufficient registers", "register target constraints", ALLOCATION_FAILED, "is not cached")


def _not_applicable(side: Side, o: Outcome) -> bool:
    """A rejection that says nothing about the compiler (``_LIMITS``); a crash always does."""
    text = o.fault or ""
    return o.rejected and not o.crashed and any(t in text for t in _LIMITS)


def compare_pair(variant: Variant, judge: Judge, *, defined: dict[str, np.ndarray] | None = None,
                 family: str | None = None, cache: dict | None = None, integer_only: bool = False) -> Finding | None:
    """Run both sides through ``judge``; a Finding when they disagree, else None.

    Both sides faulting alike is no metamorphic finding (the differ reports faults). On a
    judge that is not ``deterministic`` a mismatch is rerun once: a side that changes on its
    own rerun gives ``<judge>:nondeterministic|<side>|<family>`` instead.
    ``cache`` (``Side.key()`` -> Outcome) lets pairs that share a side (the original at -O3) run it once.
    """
    fam = family or program_family(variant.left.program)
    cache = {} if cache is None else cache

    def run(side: Side, fresh: bool = False) -> Outcome:
        key = side.key() if getattr(judge, "reads_build", True) else (side.program.to_ptx(), _data_key(side.program))
        if fresh or key not in cache:
            cache[key] = judge.run(side.program, side.build)
        return cache[key]

    lo, ro = run(variant.left), run(variant.right)
    base_ev = (("relation", variant.relation), ("left", variant.left.name), ("right", variant.right.name),
               ("left_build", str(variant.left.build)), ("right_build", str(variant.right.build)))
    if lo.fault or ro.fault:
        if lo.fault and ro.fault:
            return None
        side, o = (variant.left, lo) if lo.fault else (variant.right, ro)
        if _not_applicable(side, o):
            return None
        what = ("crashed:" if o.crashed else "rejected:" if o.rejected else "fault:") + side.name
        return Finding(signature(judge.name, variant, what, fam), f"{side.name} side: {o.fault}; the other side ran",
                       base_ev + (("fault", o.fault),))
    d = first_difference(variant.left.program, lo.outputs, ro.outputs, defined, integer_only)
    if d is None:
        return None
    if not judge.deterministic:
        for side, o in ((variant.left, lo), (variant.right, ro)):
            again = run(side, fresh=True)
            if again.fault or first_difference(side.program, o.outputs, again.outputs, defined, integer_only):
                return Finding(f"{judge.name}:nondeterministic|{side.name}|{fam}",
                               f"the {side.name} side of {variant.relation} gave different outputs on a rerun",
                               base_ev + (("side", side.name),))
    return Finding(signature(judge.name, variant, "mismatch", fam),
                   f"{variant.relation}: {d.count} element(s) of {d.buffer} differ; first [{d.index}]: "
                   f"{variant.left.name} {d.left}, {variant.right.name} {d.right}",
                   base_ev + (("buffer", d.buffer), ("index", d.index), ("left_value", d.left),
                              ("right_value", d.right), ("differing", d.count), ("compared", d.compared)))


def determinism(program: Program, judge: Judge, *, defined: dict[str, np.ndarray] | None = None,
                family: str | None = None, integer_only: bool = False, build: Build = BASE) -> Finding | None:
    """Run the base build twice on the same input, shared memory scrubbed with another pattern
    before each run (``SCRUB_PATTERNS``), before any pair is compared: output bytes that change
    come from a race or from memory read before it was written (``build``: the base side's).  The checker called the program
    defined, so that is a finding of its own (``<judge>:nondeterministic|O3|<family>``), never a
    miscompile; the program's pairs are then not compared."""
    if judge.deterministic:
        return None
    fam = family or program_family(program)
    runs = []
    for pattern in SCRUB_PATTERNS:
        runs.append(judge.run(program, build, scrub=pattern) if isinstance(judge, HardwareJudge)
                    else judge.run(program, build))
    a, b = runs
    if a.fault or b.fault:
        return None  # a fault is the differ's finding (hardware:fault), not a pair's
    d = first_difference(program, a.outputs, b.outputs, defined, integer_only)
    if d is None:
        return None
    return Finding(f"{judge.name}:nondeterministic|{BASE_NAME}|{fam}",
                   f"two runs of one build on one input differ (shared memory scrubbed with "
                   f"{SCRUB_PATTERNS[0]:#x}, then {SCRUB_PATTERNS[1]:#x}): {d.count} element(s) of {d.buffer}; "
                   f"first [{d.index}]: {d.left}, then {d.right}",
                   (("buffer", d.buffer), ("index", d.index), ("first_run", d.left), ("second_run", d.right),
                    ("differing", d.count), ("compared", d.compared)))


_COMPILED_RELATIONS = ("opt-level", "options", "release")


@dataclass
class Checked:
    """One program's metamorphic run: which relations ran, what was found, why it was skipped."""
    skipped: str | None = None
    relations: list[str] = field(default_factory=list)
    findings: list[tuple[Variant, Finding]] = field(default_factory=list)
    pairs: list[str] = field(default_factory=list)  # the pairs compared ("O3!=O0", ...)
    inputs: int = 0  # input sets each pair was compared on
    note: str | None = None  # why the comparison had no reference mask


def check_program(program: Program, judge: Judge, *, seed: int = 0, planted: bool = False,
                  cache: dict | None = None, pairs: Sequence[str] = REPLAY_DEFAULT, inputs: int = 1,
                  reference: Any = None) -> Checked:
    """Every pair of ``program`` through ``judge`` (nothing when the checker finds it undefined)."""
    prepared = prepare_pairs(program, seed=seed, planted=planted, pairs=pairs, reference=reference)
    if isinstance(prepared, Checked):
        return prepared
    if isinstance(judge, HardwareJudge):
        prepared.compile_with(judge)
    return prepared.judge(judge, cache=cache, inputs=inputs)


@dataclass
class PreparedPairs:
    """A program's pairs with every side already compiled (``built``: (text, Build) -> PtxasResult):
    what a campaign's CPU pool hands its GPU workers, so no ptxas runs beside the GPU."""

    variants: list[Variant]
    defined: dict[str, np.ndarray] | None
    family: str
    built: dict = field(default_factory=dict)
    program: Program | None = None
    integer_only: bool = False
    maxrreg: bool = False  # add the maxrreg pair once the base build's registers are known
    note: str | None = None
    staged: dict | None = None  # builds at hand, kept for ``compile_together`` over a whole block
    base: Build = BASE  # the build the compile pairs compare with (another release's in a release matrix)
    determinism: bool = True  # run the determinism check first (not for a race-free-by-construction kernel)
    inputs: int | None = None  # input sets for this program's pairs (None: the judge's ``inputs``)

    def judge(self, judge: Judge, cache: dict | None = None, inputs: int = 1) -> Checked:
        """Every pair through ``judge``: on the GPU, the determinism check first, then each pair on
        ``inputs`` input sets (``reseeded``); a pair's first disagreement is its finding."""
        out = Checked(relations=[v.relation for v in self.variants], pairs=[v.pair for v in self.variants],
                      inputs=inputs, note=self.note)
        cache = {} if cache is None else cache
        if self.program is not None and self.variants and self.determinism:
            nd = determinism(self.program, judge, defined=self.defined, family=self.family, build=self.base)
            if nd is not None:
                out.findings.append((Variant("determinism", Side(BASE_NAME, self.program), Side(BASE_NAME, self.program)), nd))
                return out
        found: set[str] = set()
        for k in range(max(1, inputs)):
            for v in self.variants:
                if v.pair in found:
                    continue
                f = compare_pair(v.with_inputs(k), judge, defined=self.defined, family=self.family, cache=cache,
                                 integer_only=self.integer_only and v.relation in _COMPILED_RELATIONS)
                if f is not None:
                    found.add(v.pair)
                    out.findings.append((v, replace(f, evidence=f.evidence + (("input_set", k),)) if k else f))
        return out

    def compile(self, known: dict | None = None) -> "PreparedPairs":
        """Compile every side in one ptxas batch per build (``known``: results at hand, keyed
        (text, Build) or (text, opt level)), then the maxrreg pair from the base build's registers."""
        return compile_together([(self, known)])[0]

    def compile_with(self, judge: "HardwareJudge") -> "PreparedPairs":
        """``compile`` through a GPU judge's own cache of builds (``replay``, the reducer)."""
        def build(keys):
            judge.prepare([(self.program if self.program is not None and t == self.program.to_ptx() else _text_program(t, self), b)
                           for t, b in keys])
            return {k: judge._built[k] for k in keys}
        self.built.update(build(self._missing()))
        key = self._maxrreg_key()
        if key is not None:
            self.built.update(build([key]))
        judge._built.update(self.built)
        return self

    def _missing(self) -> list[tuple[str, Build]]:
        """The (text, build) keys of its sides (and of the base build, for the maxrreg pair) not built yet."""
        keys = [(side.program.to_ptx(), side.build) for v in self.variants for side in (v.left, v.right)]
        if self.maxrreg and self.program is not None:
            keys.append((self.program.to_ptx(), self.base))
        return [k for k in dict.fromkeys(keys) if k not in self.built]

    def _maxrreg_key(self) -> tuple[str, Build] | None:
        """Once the base build is at hand: the maxrreg pair added from its registers, and its
        side's key where it still needs building."""
        if not (self.maxrreg and self.program is not None):
            return None
        self.maxrreg = False
        base = self.built.get((self.program.to_ptx(), self.base))
        regs = None
        if base is not None and base.accepted and base.cubin is not None:
            name = dict(base.kernel_names).get(self.program.launch.kernel, self.program.launch.kernel)
            regs = elf.registers(base.cubin).get(name)
        b = maxrreg_build(regs) if regs else None
        if b is None:
            return None
        b = replace(b, release=self.base.release)
        self.variants.append(Variant("options", Side(BASE_NAME, self.program, self.base), Side(MAXRREG, self.program, b)))
        key = (self.program.to_ptx(), b)
        return None if key in self.built else key


def compile_together(items: Sequence[tuple[PreparedPairs, dict | None]]) -> list[PreparedPairs]:
    """``PreparedPairs.compile`` for several programs at once (a campaign block's): one batched
    ptxas run per build for all of them, not one process per build and program (for a small
    program, starting ptxas cost more than compiling its side)."""
    from dataclasses import replace as _replace

    def portable(res):  # a plain dict of kernel names, so the result pickles to a GPU worker
        return _replace(res, kernel_names=dict(res.kernel_names))

    for prep, known in items:
        prep.built.update({(t, _as_build(b)): portable(r) for (t, b), r in (known or {}).items()})
    wanted = [prep._missing() for prep, _ in items]
    results = compile_builds(list(dict.fromkeys(k for keys in wanted for k in keys)))
    for (prep, _), keys in zip(items, wanted):
        prep.built.update({k: results[k] for k in keys})
    second = [prep._maxrreg_key() for prep, _ in items]
    results = compile_builds(list(dict.fromkeys(k for k in second if k is not None)))
    for (prep, _), key in zip(items, second):
        if key is not None:
            prep.built[key] = results[key]
        prep.built = {k: portable(r) for k, r in prep.built.items()}
    return [prep for prep, _ in items]


def _text_program(text: str, pairs: PreparedPairs) -> Program:
    """The side program whose text is ``text`` (a transform's)."""
    for v in pairs.variants:
        for side in (v.left, v.right):
            if side.program.to_ptx() == text:
                return side.program
    raise KeyError(text[:80])


def prepare_pairs(program: Program, *, seed: int = 0, planted: bool = False, pairs: Sequence[str] = REPLAY_DEFAULT,
                  reference: Any = None, release: str | None = None,
                  taken: Callable[[str], Any] | None = None, base_release: str | None = None) -> "PreparedPairs | Checked":
    """The pairs ``program`` takes part in, ready to compile and judge; a ``Checked`` saying why
    when none can.  ``reference``: the reference's result or exception, when already at hand;
    ``taken``: a run already taken, by numerics mode (``pair_eligibility``); ``base_release``: the
    release that builds the sides (``metamorphic_pairs``)."""
    el = pair_eligibility(program, reference, taken)
    if not el.ok:
        return Checked(skipped=el.reason)
    if el.defined is None:  # the transforms are sound only where the reference defines the program
        pairs = tuple(p for p in pairs if p not in TRANSFORMS)
    variants = metamorphic_pairs(program, seed=seed, planted=planted, defined=el.defined, pairs=pairs, release=release,
                                 base_release=base_release)
    if not variants and MAXRREG not in pairs:
        return Checked(skipped="no pair applies" + (f" (reference: {el.note})" if el.note else ""))
    return PreparedPairs(variants, el.defined, program_family(program), program=program,
                         integer_only=el.integer_only, maxrreg=MAXRREG in pairs, note=el.note,
                         base=base_build(base_release))


_RELEASE_SIDES = re.compile(r"\d+\.\d+\.\d+!=\d+\.\d+\.\d+")


def is_metamorphic(sig: str) -> bool:
    """Whether a finding signature is one of this module's (``<judge>:<left>!=<right>|...`` with
    side names from ``RELATIONS``/``PLANTED``, the compile pairs or two releases, or
    ``<judge>:nondeterministic|...``)."""
    pair = sig.split("|", 1)[0]
    judge_, _, sides = pair.partition(":")
    names = {f"{l}!={r}" for l, r in list(RELATIONS.values()) + [PLANTED[1]]}
    left, _, right = sides.partition("!=")
    compiled = left == BASE_NAME and right in side_names()
    return bool(judge_) and (sides in names or sides == "nondeterministic" or compiled
                             or bool(_RELEASE_SIDES.fullmatch(sides)))


def pairs_of(sig: str) -> tuple[tuple[str, ...], str | None]:
    """The ``--pairs`` names (and the release) that rerun the pair a signature names: what the
    reducer and a repro's replay run, instead of every pair."""
    sides = sig.split("|", 1)[0].partition(":")[2]
    left, _, right = sides.partition("!=")
    if sides == "nondeterministic":
        return ("O0",), None  # any pair: the determinism check runs before every comparison
    if _RELEASE_SIDES.fullmatch(sides):
        return (RELEASE,), right
    if left == BASE_NAME and right in side_names():
        return (right,), None
    for name, (l, r) in RELATIONS.items():
        if (l, r) == (left, right):
            return ((name,) if name in TRANSFORMS else ("O0",)), None
    return (), None


def keeps(sig: str, judge: Judge, *, seed: int = 0) -> Callable[[Sequence[Program]], list[bool]]:
    """A predicate for ``fuzzptx.reduce.shrink``: which candidates still show a metamorphic finding
    whose signature starts with ``sig`` (judged in order, stopping at the first that does); only
    the pair the signature names runs."""
    planted = PLANTED[1][1] in sig
    pairs, release = pairs_of(sig)

    def holds(programs: Sequence[Program]) -> list[bool]:
        out = [False] * len(programs)
        for i, program in enumerate(programs):
            prepared = prepare_pairs(program, seed=seed, planted=planted, pairs=pairs or REPLAY_DEFAULT, release=release)
            if isinstance(prepared, Checked):
                continue
            if isinstance(judge, HardwareJudge):
                prepared.compile_with(judge)
            found = prepared.judge(judge).findings
            if any(f.signature.startswith(sig) for _, f in found):
                out[i] = True
                break
        return out

    return holds


__all__ = [
    "RELATIONS", "PLANTED", "DEAD_PARAM", "Side", "Variant", "serialise", "drop_wgmma", "planted_variant",
    "with_dead_uniform_branches", "dead_branch_points", "contractible_float_ops", "Eligibility",
    "spec_findings", "spec_defined", "pair_eligibility", "first_defined", "metamorphic_pairs", "Outcome", "Judge",
    "ReferenceJudge", "HardwareJudge", "ReferenceWorker", "Difference", "first_difference", "signature",
    "compare_pair", "determinism", "Checked", "check_program", "PreparedPairs", "prepare_pairs", "compile_builds",
    "reseeded", "is_metamorphic", "pairs_of", "keeps",
]



def predicate(signature: str) -> Callable[[Sequence[Program]], list[bool]]:
    """The reducer's predicate for a metamorphic signature (``--keep hardware:pipelined!=serialised|...``):
    both sides on the GPU (one worker for the whole shrink); ``reference:...`` ones on the CPU."""
    if signature.startswith("reference:"):
        return keeps(signature, ReferenceJudge())
    why = gpu_available()
    if why:
        raise FuzzptxError(f"{signature.split('|')[0]} needs a GPU: {why}")
    worker = HardwareWorker()
    worker.start()
    return keeps(signature, HardwareJudge(worker))

def verdict(program: Program, *, on_gpu: bool, worker: Any = None, pairs: Sequence[str] = REPLAY_DEFAULT,
            inputs: int = 1, reference: Any = None) -> "Checked":
    """The program's metamorphic pairs (this module's) on the GPU when ``on_gpu`` (through
    ``worker``, or a fresh one), else on the reference as its CPU stand-in (where the compile
    pairs hold trivially: only the transforms are tested). A judge that breaks says so as a skip,
    never by losing the program's other verdicts."""
    try:
        if on_gpu:
            if worker is None:
                with HardwareWorker() as w:
                    return check_program(program, HardwareJudge(w), pairs=pairs, inputs=inputs, reference=reference)
            return check_program(program, HardwareJudge(worker), pairs=pairs, inputs=inputs, reference=reference)
        cpu_pairs = tuple(p for p in pairs if p in TRANSFORMS)
        if not cpu_pairs:
            return Checked(skipped="compile pairs need the GPU (on the reference they hold trivially)")
        return check_program(program, ReferenceJudge(), pairs=cpu_pairs, reference=reference)
    except Exception as exc:  # noqa: BLE001
        if type(exc).__name__ == "HardwareUnavailable":
            raise
        return Checked(skipped=f"metamorphic judge failed: {type(exc).__name__}: {exc}")
