"""Uniformity: which registers and branches are the same for every thread of a warp, warpgroup, CTA.

Levels, most uniform first: CTA > WARPGROUP > WARP > THREAD.  ``%ctaid``, parameters and
constants are CTA-uniform; ``%tid``/``%laneid``/clocks vary per thread; arithmetic takes the
least uniform operand; a value defined under a branch is no more uniform than the branch
(control dependence via post-dominators) -- unless it is its register's one definition and
comes before every read (``dominating_defs``): then every reader ran it, and a predicate computed
from parameters inside a loop with a per-thread trip count is still CTA-uniform after it; a
guarded definition no more than its guard.

``%tid.x >> k`` (or ``/ 2**k``, or ``& mask`` with k trailing zero bits) is tracked exactly:
k >= 7 is warpgroup-uniform, k >= 5 warp-uniform.  That is sound when the warp rank is
``%tid.x / 32``, i.e. for one-dimensional blocks or ``%ntid.x`` a multiple of 128; a kernel
whose ``.reqntid``/``.maxntid`` (or repro ``LAUNCH:`` header) says otherwise gets no such credit.
A comparison of ``%tid.x >> k`` with a constant is warpgroup-uniform when the constant falls on
a warpgroup boundary (``warp < 4`` is ``%tid.x < 128``); a ``shfl.sync.idx`` broadcast of a
warp-uniform value is that value (its exact shift survives).  A warp-indexed table lookup --
``ld.shared.b8 [sym + warp + c]`` with every store that may reach the table writing the same
byte into each aligned group of four (Triton's warp-specialisation partition table) -- is
warpgroup-uniform (``warp_tables``: the conditions and the one assumption); the other writes are
bounded where they run (``address_interval``, ``values.interval_at``).
A register written more than once has a level per definition, and a read takes the least uniform
of the definitions that reach it (``_reaching``): nvcc reuses registers -- an inline-asm output
(CUTLASS's ``elect.sync`` block rewrites the ``0`` a ``shfl.sync.idx`` read as its lane), a
persistent kernel's tile index advanced inside one warp's loop -- and one level for all of a
register's values would make the uniform ones per-thread.  ``Uniformity.regs`` keeps the least
uniform definition of each register.
``%tid.y``/``%tid.z`` vary per thread unless ``.reqntid`` or the repro header's ``LAUNCH: ...
block=x,y,z`` makes that dimension 1 (then they are 0).  The ``ptxas`` flavour models what
ptxas itself treats as divergent (measured; see ``analyse_uniformity``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from fuzzptx.perf import per_object
from fuzzptx.ptx.cfg import build_cfg
from fuzzptx.ptx.ir import Addr, Function, Imm, Instr, Module, Reg, Sym, Vec
from fuzzptx.ptx.smem import shared_layout, type_bytes

from .flow import Graph, solve_forward
from .regs import defs_uses
from .values import interval_at

THREAD, WARP, WARPGROUP, CTA = 0, 1, 2, 3
LEVEL_NAMES = {THREAD: "thread", WARP: "warp", WARPGROUP: "warpgroup", CTA: "CTA"}

_THREAD_SPECIALS = ("%tid", "%laneid", "%clock", "%lanemask", "%globaltimer")
_WARP_SPECIALS = ("%warpid",)
_TOP = "top"


def _shift_level(k: int, tid_credit: bool) -> int:
    if not tid_credit:
        return THREAD
    return WARPGROUP if k >= 7 else WARP if k >= 5 else THREAD


def _special(name: str) -> tuple[int, object]:
    if name == "%tid.x":
        return THREAD, 0
    stem = name.split(".", 1)[0]
    if stem.startswith(_THREAD_SPECIALS):
        return THREAD, None
    if stem in _WARP_SPECIALS:
        return WARP, None
    return CTA, None


def _pow2(v) -> int | None:
    if isinstance(v, int) and v > 0 and v & (v - 1) == 0:
        return v.bit_length() - 1
    return None


def block_dims(fn: Function, preamble: tuple[str, ...] = ()) -> tuple[int, int, int] | None:
    """The block shape if known: ``.reqntid x, y, z`` or a repro header's ``LAUNCH: kernel=K ... block=x,y,z``."""
    req = fn.ntid("reqntid")
    if req is not None:
        return req
    for line in preamble:
        m = re.match(r"\s*LAUNCH:.*\bkernel=(\S+).*\bblock=(\d+),(\d+),(\d+)", line)
        if m and m.group(1) == fn.name:
            return int(m.group(2)), int(m.group(3)), int(m.group(4))
    return None


def _tid_credit(fn: Function) -> bool:
    """False when a launch-bound directive says the block is multi-dimensional with ntid.x % 128 != 0."""
    for directive in ("reqntid", "maxntid"):
        shape = fn.ntid(directive)
        if shape is not None and (shape[1] > 1 or shape[2] > 1) and shape[0] % 128:
            return False
    return True


@dataclass
class Uniformity:
    regs: dict[str, int]
    block_level: dict[int, int]
    divergent_edges: frozenset  # control-dependence keys (branch block, succ) whose branch is divergent
    threshold: int = WARPGROUP  # levels below this count as divergent

    def level(self, op) -> int:
        if isinstance(op, Reg):
            if op.name in self.regs:
                return self.regs[op.name]
            return _special(op.name)[0] if op.name.startswith("%") and "." in op.name else CTA
        return CTA

    def instr_level(self, block: int, instr: Instr) -> int:
        lvl = self.block_level.get(block, CTA)
        if instr.guard is not None:
            lvl = min(lvl, self.level(instr.guard.reg))
        return lvl


def branch_reg(block) -> Reg | None:
    """The register deciding which successor a block takes (guard of bra/ret/exit, brx index)."""
    if not block.instrs:
        return None
    last = block.instrs[-1]
    if last.base in ("bra", "ret", "exit", "trap") and last.guard is not None:
        return last.guard.reg
    if last.base == "brx" and last.operands and isinstance(last.operands[0], Reg):
        return last.operands[0]
    return None


def analyse_uniformity(fn: Function, g: Graph, flavour: str = "spec", preamble: tuple[str, ...] = (),
                       module: Module | None = None, distrust_uni: frozenset = frozenset()) -> Uniformity:
    """``flavour="spec"``: sound levels for the PTX rules (divergent = below warpgroup).
    ``flavour="ptxas"``: what ptxas 13.0.88 treats as divergent (measured: anything from %tid/%laneid,
    no credit for %tid.x >> 7; %warpid, %clock and shfl broadcasts uniform; ``bra.uni`` trusted,
    save the branches ending the blocks ``distrust_uni`` names: their edges diverge by their predicate,
    what they control stays uniform; the ptxas model says which, ``ptxas_rules.BraUniDistrusted``)."""
    ptxas = flavour == "ptxas"
    credit = _tid_credit(fn) and not ptxas
    threshold = WARP if ptxas else WARPGROUP
    dims = None if ptxas else block_dims(fn, preamble)
    if dims and (dims[1] > 1 or dims[2] > 1) and dims[0] % 128:
        credit = False
    flat = {f"%tid.{ax}" for ax, n in zip("yz", dims[1:]) if n == 1} if dims else set()  # always 0
    level: dict[str, int] = {}
    exact: dict[str, object] = {}
    for p in fn.params:
        if p.space == ".reg":
            level[p.name], exact[p.name] = (THREAD if fn.kind == "func" else CTA), None

    reach = _reaching(g)

    def named(name: str) -> tuple[int, object]:
        if name in level:
            return level[name], exact.get(name)
        if name.startswith("%") and name.split(".")[0] not in ("%r", "%rd"):
            sp = (CTA, None) if name in flat else _special(name)
            if ptxas and name.split(".")[0] in ("%clock", "%clock64", "%globaltimer"):
                sp = (WARP, None)
            if sp != (CTA, None) or "." in name:
                return sp
        return CTA, _TOP

    def op_val(op, at: Instr | None = None) -> tuple[int, object]:
        if isinstance(op, Reg):
            keys = (reach.get((id(at), op.name)) or reach.get((0, op.name))) if reach else None
            if keys is None:
                return named(op.name)
            vals = [named(k) for k in keys]
            ex = {e for _, e in vals if e is not _TOP}
            return min(v[0] for v in vals), (_TOP if not ex else ex.pop() if len(ex) == 1 else None)
        if isinstance(op, Addr):
            return op_val(op.base, at) if isinstance(op.base, Reg) else (CTA, None)
        return CTA, None

    def branch_levels() -> tuple[dict[int, int], frozenset]:
        bl: dict[int, int] = {}
        div = set()
        for b in g.blocks:
            lvl = CTA
            for (x, y) in g.cdeps[b.index]:
                r = branch_reg(g.blocks[x])
                bx = THREAD if r is None else op_val(r, g.blocks[x].instrs[-1])[0]
                if bx < threshold:
                    div.add((x, y))
                if ptxas and g.blocks[x].instrs and g.blocks[x].instrs[-1].opcode.startswith("bra.uni"):
                    bx = max(bx, WARP)
                    if x not in distrust_uni:
                        div.discard((x, y))
                lvl = min(lvl, bx)
            bl[b.index] = lvl
        changed = not ptxas
        while changed:  # a branch only some threads reach splits no more than those: nesting is transitive
            changed = False
            for b in g.blocks:
                lvl = min((bl.get(x, CTA) for (x, _y) in g.cdeps[b.index]), default=CTA)
                if lvl < bl[b.index]:
                    bl[b.index] = lvl
                    changed = True
        return bl, frozenset(div)

    instrs = _sliced(g)
    sole = frozenset() if ptxas else dominating_defs(fn)
    tables = warp_tables(module, fn, g, dims) if (module is not None and credit and not ptxas) else {}
    changed = True
    rounds = 0
    while changed and rounds < 50:
        changed = False
        rounds += 1
        bl, _ = branch_levels()
        for bidx, ins in instrs:
            defs, _uses = defs_uses(ins)
            if not defs:
                continue
            val_l, val_e = _transfer(ins, lambda o, at=ins: op_val(o, at), credit)
            w = tables.get(id(ins))
            if w is not None and op_val(w, ins)[1] == 5:
                val_l, val_e = WARPGROUP, None  # a warp-indexed table lookup (see warp_tables)
            ctl = CTA if id(ins) in sole else bl.get(bidx, CTA)
            if ins.guard is not None:
                ctl = min(ctl, op_val(ins.guard.reg, ins)[0])
            if ctl < CTA:
                val_l, val_e = min(val_l, ctl), None
            for d in defs:
                d = reach.get((~id(ins), d), d) if reach else d
                old_l = level.get(d, CTA)
                old_e = exact.get(d, _TOP)
                new_l = min(old_l, val_l)
                new_e = val_e if old_e == _TOP else (old_e if old_e == val_e or val_e == _TOP else None)
                if new_e not in (_TOP, None):
                    new_l = min(new_l, _shift_level(new_e, credit))  # type: ignore[arg-type]
                if (new_l, new_e) != (old_l, old_e) or d not in level:
                    level[d], exact[d] = new_l, new_e
                    changed = True
    bl, div = branch_levels()
    op_val = None  # noqa: F841 (it calls itself: unlinked, it and what it holds die at once)
    regs: dict[str, int] = {}
    for name, lvl in level.items():
        reg = name.split(_DEF, 1)[0]
        regs[reg] = min(regs.get(reg, CTA), lvl)
    return Uniformity(regs, bl, div, threshold)


@per_object(64)
def dominating_defs(fn: Function) -> frozenset[int]:
    """``id``s of the unguarded instructions that are the one definition of every register they
    write and come before each read of it (in its block, or in a block that dominates the
    reader's).  Such a value is the same for every thread that reads it whenever its operands are:
    every reader ran the definition, so the branches around it do not matter (a value read at a
    merge of several definitions, or after a loop some threads leave early, is another register's
    or has several definitions, and keeps the branch's level)."""
    cfg = build_cfg(fn)
    only = single_defs(fn)
    where: dict[int, tuple[int, int]] = {}
    readers: dict[str, list[tuple[int, int]]] = {}
    for b in cfg.blocks:
        for k, ins in enumerate(b.instrs):
            where[id(ins)] = (b.index, k)
            for u in defs_uses(ins)[1]:
                readers.setdefault(u, []).append((b.index, k))
    out = set()
    for ins in {id(i): i for i in only.values() if i is not None}.values():
        names = defs_uses(ins)[0]
        if id(ins) not in where or not names or any(only.get(d) is not ins for d in names) or not _timeless(ins):
            continue
        db, dk = where[id(ins)]
        if all((rb == db and rk > dk) or (rb != db and db in cfg.dominators(rb))
               for d in names for rb, rk in readers.get(d, ())):
            out.add(id(ins))
    return frozenset(out)


_COLLECTIVES = frozenset({"shfl", "vote", "match", "redux", "elect", "activemask", "bar", "barrier"})


def _timeless(ins: Instr) -> bool:
    """Whether ``ins`` gives the same result whenever its operands are the same: register arithmetic
    and reads of the parameter and constant spaces -- not other memory (which may change between a
    thread's last iteration and another's), nor the warp collectives (whose result depends on which
    threads take part)."""
    if ins.base in _COLLECTIVES:
        return False
    if any(isinstance(o, Addr) for o in ins.operands):
        return ins.base in ("ld", "ldu") and (".param" in ins.opcode or ".const" in ins.opcode)
    return True


_DEF = "~"  # a definition's name: the register's, this, a number (no PTX name holds it)


@per_object(64)
def _reaching(g: Graph) -> dict[tuple[int, str], object]:
    """For each register written more than once (others keep their one name): ``(id(instr), reg)``
    -> the names of the definitions of ``reg`` that reach ``instr``'s read of it, and
    ``(~id(instr), reg)`` -> the name of ``instr``'s definition (``reg~N``; the value at the entry,
    a ``.func`` parameter, is ``reg`` itself), ``(0, reg)`` -> all of them (for a read in a block
    the entry does not reach).  Reaching definitions over the CFG; a guarded write
    does not kill the one before it.  Empty when no register is written twice."""
    sliced = _sliced(g)
    if not sliced:
        return {}
    count: dict[str, int] = {}
    for _, ins in sliced:  # only the slice's registers decide a level
        for d in defs_uses(ins)[0]:
            count[d] = count.get(d, 0) + 1
    multi = {r for r, n in count.items() if n > 1}
    if not multi:
        return {}
    out: dict[tuple[int, str], object] = {}
    touching: list[list[tuple]] = []  # per block: (instr, regs of multi it reads, it writes)
    for b in g.blocks:
        row = []
        for ins in b.instrs:
            d_names, u_names = defs_uses(ins)
            du, uu = d_names & multi, u_names & multi
            if du or uu:
                row.append((ins, uu, du))
                for d in du:
                    out[(~id(ins), d)] = f"{d}{_DEF}{len(out)}"
        touching.append(row)
    for (_, d), name in list(out.items()):  # a read the solver did not reach (dead code): every definition
        out[(0, d)] = out.get((0, d), (d,)) + (name,)

    def step(b: int, state: dict, record: bool) -> dict:
        if not touching[b]:
            return state
        state = dict(state)
        for ins, uu, du in touching[b]:
            if record:
                for u in uu:
                    out[(id(ins), u)] = tuple(sorted(state.get(u, (u,))))
            for d in du:
                here = out[(~id(ins), d)]
                state[d] = state.get(d, frozenset((d,))) | {here} if ins.guard is not None else frozenset((here,))
        return state

    def join(states: list) -> dict:
        regs = {r for st in states for r in st}  # a register a state lacks holds its entry value there
        return {r: frozenset().union(*(st.get(r, frozenset((r,))) for st in states)) for r in regs}

    for b, st in solve_forward(g, {}, lambda b, st: step(b, st, False), join).items():
        step(b, st, True)
    return out


@per_object(64)
def _sliced(g: Graph) -> list:
    """``_slice`` of all the graph's instructions, kept per graph: both flavours of the analysis
    (the spec's and ptxas's) slice the same function."""
    return _slice(g, [(b.index, i) for b in g.blocks for i in b.instrs])


def _slice(g: Graph, instrs: list) -> list:
    """Only definitions that can reach a branch condition or a guard matter (a backward slice)."""
    work = [r.name for b in g.blocks if (r := branch_reg(b)) is not None]
    work += [ins.guard.reg.name for _, ins in instrs if ins.guard is not None]
    if not work:
        return []  # no branch condition or guard: nothing to slice for
    defs_of: dict[str, list] = {}
    for bidx, ins in instrs:
        for d in defs_uses(ins)[0]:
            defs_of.setdefault(d, []).append((bidx, ins))
    seen: set[str] = set()
    keep: dict[int, tuple] = {}
    while work:
        r = work.pop()
        if r in seen:
            continue
        seen.add(r)
        for bidx, ins in defs_of.get(r, ()):
            keep[id(ins)] = (bidx, ins)
            work.extend(defs_uses(ins)[1])
            for (x, _y) in g.cdeps[bidx]:
                br = branch_reg(g.blocks[x])
                if br is not None:
                    work.append(br.name)
    return [x for x in instrs if id(x[1]) in keep]


def _transfer(ins: Instr, op_val, credit: bool) -> tuple[int, object]:
    """(level, exact tid.x shift or None) of the value an instruction defines."""
    base = ins.base
    ops = ins.operands
    srcs = ops[1:] if ops else ()
    if base in ("atom", "elect", "match", "activemask") or ins.opcode.startswith(("mbarrier.try_wait", "mbarrier.test_wait")):
        return THREAD, None
    if base in ("vote", "redux"):
        return max(WARP, min((op_val(o)[0] for o in srcs if not isinstance(o, Imm)), default=CTA)), None
    if base == "shfl" and len(srcs) >= 2:
        lane_l = op_val(srcs[1])[0]
        if lane_l >= WARP:
            src = op_val(srcs[0])
            if src[0] >= WARP and ".idx" in ins.opcode and credit:
                return src  # every lane reads the same lane of a warp-uniform value: the value itself
            return max(WARP, src[0]), None
        return THREAD, None
    if base == "setp" and len(srcs) == 2:
        lvl = _setp_level(ins, [op_val(o) for o in srcs], srcs, credit)
        if lvl is not None:
            return lvl, None
    vals = [op_val(o) for o in srcs]
    lvl = min((v[0] for v in vals), default=CTA)
    if base in ("mov", "cvt", "cvta") and len(vals) == 1:
        return vals[0]
    if base in ("shr", "div") and len(srcs) == 2 and isinstance(srcs[1], Imm):
        k = vals[0][1]
        c = srcs[1].value if base == "shr" else _pow2(srcs[1].value)
        if isinstance(k, int) and isinstance(c, int) and c >= 0:
            return _shift_level(k + c, credit), k + c
    if base == "and" and len(srcs) == 2 and isinstance(k := vals[0][1], int) and isinstance(srcs[1], Imm):
        m = srcs[1].value
        if isinstance(m, int) and m != 0:
            tz = (m & -m).bit_length() - 1
            return max(lvl, _shift_level(k + tz, credit)), None
    if base in ("ld", "ldu") and ".param" in ins.opcode:
        return CTA, None
    return lvl, None


_CMP_LOW = {"lt": 0, "ge": 0, "le": 1, "gt": 1}  # (tid >> k) < c is decided at c; <= c at c + 1


def _setp_level(ins: Instr, vals, srcs, credit: bool) -> int | None:
    """``setp.lt (%tid.x >> k), c``: warpgroup-uniform when the threshold is a multiple of the
    warps (or threads) in a warpgroup, so all of one warpgroup fall on one side."""
    if not credit:
        return None
    cmp = ins.modifiers[0] if ins.modifiers else ""
    (k, _), imm = ((vals[0][1], None), srcs[1]) if isinstance(vals[0][1], int) else ((vals[1][1], None), srcs[0])
    if not isinstance(k, int) or not isinstance(imm, Imm) or not isinstance(imm.value, int) or k >= 7:
        return None
    if imm is srcs[0]:  # c < x  is  x > c
        cmp = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}.get(cmp, cmp)
    if cmp not in _CMP_LOW:
        return None
    edge = imm.value + _CMP_LOW[cmp]
    return WARPGROUP if edge % (1 << (7 - k)) == 0 else None


# ------------------------------------------------------------------ warp-indexed tables

_UNKNOWN = None
_SHARED_WRITERS = ("st", "atom", "red", "stmatrix", "cp", "mbarrier", "wmma")


@per_object(64)
def single_defs(fn: Function) -> dict[str, Instr | None]:
    """Register -> its one unguarded definition (None where it has several or a guarded one);
    kept per function: the table rule, the proxy rule and the mbarrier rule all ask."""
    out: dict[str, Instr | None] = {}
    for ins in fn.instructions():
        for d in defs_uses(ins)[0]:
            out[d] = None if (d in out or ins.guard is not None) else ins
    return out


def shared_interval(op, defs, tid_max: int | None, depth: int = 0, bounds: dict | None = None):
    """(symbol or None, lo, hi): ``op`` lies in ``symbol + [lo, hi]``; None when unknown.
    Follows one-definition registers through mov/cvt/add/sub/and/shl/shr/mul/bfe.  ``bounds``:
    register -> (lo, hi) it is known to lie in where the access runs (its guard's comparison)."""
    if bounds and isinstance(op, Reg) and op.name in bounds:
        b_lo, b_hi = bounds[op.name]
        own = shared_interval(op, defs, tid_max, depth, None)
        if own is not None and own[0] is None:
            lo, hi = own[1] if b_lo is None else max(b_lo, own[1]), min(b_hi, own[2])
            return (None, lo, hi) if lo <= hi else own
        return (None, b_lo, b_hi) if b_lo is not None else own
    if isinstance(op, Imm):
        return (None, op.value, op.value) if isinstance(op.value, int) else _UNKNOWN
    if isinstance(op, Sym):
        return (op.name, 0, 0)
    if not isinstance(op, Reg) or depth > 24:
        return _UNKNOWN
    if op.name == "%tid.x":
        return (None, 0, tid_max) if tid_max is not None else _UNKNOWN
    ins = defs.get(op.name)
    if ins is None or len(ins.operands) < 2:
        return _UNKNOWN
    base, srcs = ins.base, ins.operands[1:]
    sub = [shared_interval(o, defs, tid_max, depth + 1, bounds) for o in srcs[:2]]
    a = sub[0]
    if base in ("mov", "cvt", "cvta") and len(srcs) == 1:
        types = [m for m in ins.modifiers if m[:1] in "usbf" and m[1:].isdigit()]
        if base == "cvt" and a is not None and types:
            bits = 8 * type_bytes(types[0])  # the destination type comes first
            if a[0] is None and (a[1] < 0 or a[2] >= 1 << bits):
                return _UNKNOWN  # a narrowing cvt may wrap
            if a[0] is not None and bits < 32:
                return _UNKNOWN
        return a
    if base == "and" and len(srcs) == 2 and isinstance(srcs[1], Imm) and isinstance(srcs[1].value, int) \
            and 0 <= srcs[1].value < 1 << 31:
        hi = srcs[1].value if a is None or a[0] is not None or a[1] < 0 else min(a[2], srcs[1].value)
        return (None, 0, hi)
    if base == "bfe" and len(srcs) == 3 and ".u" in ins.opcode and isinstance(srcs[2], Imm):
        return (None, 0, (1 << min(int(srcs[2].value), 32)) - 1)
    if a is None or len(srcs) < 2:
        return _UNKNOWN
    b = sub[1]
    if base == "add" and b is not None and (a[0] is None or b[0] is None):
        return (a[0] or b[0], a[1] + b[1], a[2] + b[2])
    if base == "sub" and b is not None and b[0] is None:
        return (a[0], a[1] - b[2], a[2] - b[1])
    if a[0] is not None or a[1] < 0 or b is None or b[0] is not None or b[1] < 0:
        return _UNKNOWN
    if base in ("or", "xor") and b[0] is None and b[1] >= 0:
        return (None, 0, _ones(op, defs, tid_max, 0, bounds))  # no carries: within the bits either may set
    if b[1] != b[2]:
        return _UNKNOWN
    c = b[1]
    if base == "shl":
        return (None, a[1] << c, a[2] << c)
    if base == "shr" and ".s" not in ins.opcode:
        return (None, a[1] >> c, a[2] >> c)
    if base == "mul" and ".lo" in ins.opcode:
        return (None, a[1] * c, a[2] * c)
    return _UNKNOWN


def address_interval(fn: Function, at: Instr, op, defs, tid_max: int | None):
    """``shared_interval`` narrowed by ``at``'s guard (``guard_bounds``), else ``op``'s value where
    ``at`` reads it (``values.interval_at``: stage offsets kept in loop counters, which have no
    single definition)."""
    iv = shared_interval(op, defs, tid_max, 0, guard_bounds(at, defs))
    return iv if iv is not None else interval_at(fn, at, op, tid_max)


_GUARD_HOLDS = {("lt", False): (None, -1), ("le", False): (None, 0), ("ge", True): (None, -1), ("gt", True): (None, 0),
                ("gt", False): (1, None), ("ge", False): (0, None), ("le", True): (1, None), ("lt", True): (0, None)}


def guard_bounds(at: Instr, defs) -> dict:
    """Register -> (lo, hi) that ``at``'s guard implies where it runs: ``@%p`` with ``%p`` one
    ``setp.{lt,le,gt,ge} x, c`` (``@!%p`` the other sense).  Unsigned comparisons bound from zero
    (Triton zeroes a tensor-map scratch area with ``@(t & 127) < 32 st.shared [scratch + 4*(t & 127)]``);
    a signed one only narrows an interval known otherwise (lo None)."""
    g = at.guard
    setp = defs.get(g.reg.name) if g is not None else None
    if setp is None or setp.base != "setp" or len(setp.operands) != 3 or not setp.modifiers:
        return {}
    x, c = setp.operands[1:]
    if not isinstance(x, Reg) or not isinstance(c, Imm) or not isinstance(c.value, int):
        return {}
    rule = _GUARD_HOLDS.get((setp.modifiers[0], g.negated))
    if rule is None:
        return {}
    unsigned = any(m[:1] == "u" and m[1:].isdigit() for m in setp.modifiers)
    lo_off, hi_off = rule
    lo = c.value + lo_off if lo_off is not None else (0 if unsigned else None)
    hi = c.value + hi_off if hi_off is not None else (1 << 62)
    if hi_off is not None and not unsigned:
        lo = None
    return {x.name: (lo, hi)}


def _ones(op, defs, tid_max: int | None, depth: int = 0, bounds: dict | None = None) -> int:
    """A mask holding every bit ``op`` may set (``op`` non-negative, bounded by ``shared_interval``):
    ``and``/``or``/``xor``/shifts by constants follow the bits, anything else gives all the bits
    below its upper bound's top bit."""
    ins = defs.get(op.name) if isinstance(op, Reg) and depth < 24 else None
    if ins is not None and len(ins.operands) == 3 and isinstance(ins.operands[2], Imm) \
            and isinstance(ins.operands[2].value, int) and ins.operands[2].value >= 0:
        a, c = ins.operands[1], ins.operands[2].value
        if ins.base == "and":
            return c & _ones(a, defs, tid_max, depth + 1, bounds)
        if ins.base == "shl" and c < 32:
            return _ones(a, defs, tid_max, depth + 1, bounds) << c
        if ins.base == "shr" and ".s" not in ins.opcode:
            return _ones(a, defs, tid_max, depth + 1, bounds) >> c
    if ins is not None and ins.base in ("or", "xor") and len(ins.operands) == 3:
        return _ones(ins.operands[1], defs, tid_max, depth + 1, bounds) | _ones(ins.operands[2], defs, tid_max, depth + 1, bounds)
    iv = shared_interval(op, defs, tid_max, depth + 1, bounds) if depth < 24 else None
    if iv is None or iv[0] is not None or iv[1] < 0:
        return (1 << 64) - 1
    return (1 << iv[2].bit_length()) - 1


def shared_write(ins: Instr):
    """(address operand, bytes written from it or None when unbounded) of a shared-memory write."""
    op = ins.opcode
    if ins.base not in _SHARED_WRITERS or not ins.operands:
        return None
    if ins.base == "cp":
        if op.startswith("cp.async.bulk") and ".shared" in op.split(".global")[0]:
            return ins.operands[0], None  # a bulk copy's box or size bounds it; unbounded here
        if op.startswith(("cp.async.ca", "cp.async.cg")) and len(ins.operands) >= 3:
            size = ins.operands[2]
            return ins.operands[0], size.value if isinstance(size, Imm) else 16
        return None
    if ".shared" not in op and ins.base != "stmatrix":
        return None
    if ins.base == "mbarrier":
        if any(m in ("try_wait", "test_wait") for m in ins.modifiers):
            return None  # a wait reads the phase; it writes nothing
        addr = next((o for o in ins.operands if isinstance(o, Addr)), None)
        return (addr, 8) if addr is not None else None
    if ins.base == "stmatrix":
        return ins.operands[0], 16  # each thread's address is one 16-byte row
    if ins.base in ("st", "atom", "red", "wmma"):
        if ins.base == "wmma":
            return ins.operands[0], None
        width = type_bytes(ins.modifiers[-1])
        vec = next((m for m in ins.modifiers if m in ("v2", "v4", "v8")), None)
        return ins.operands[0], width * (int(vec[1:]) if vec else 1)
    return None


def _group_uniform_bytes(ins: Instr, start: int, lo: int, hi: int) -> bool:
    """True when the immediate bytes ``ins`` stores at ``start`` are equal within every aligned group
    of four that meets [lo, hi)."""
    if ins.base != "st" or ins.guard is not None:
        return False
    vals = ins.operands[1]
    items = vals.items if isinstance(vals, Vec) else (vals,)
    width = type_bytes(ins.modifiers[-1])
    data = bytearray()
    for it in items:
        if not isinstance(it, Imm) or not isinstance(it.value, int):
            return False
        data += (it.value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
    for g in range((max(lo, start) // 4) * 4, min(hi, start + len(data)), 4):
        grp = {data[x - start] for x in range(g, g + 4) if start <= x < start + len(data)}
        if len(grp) > 1 or (len(grp) == 1 and (g < start or g + 4 > start + len(data))):
            return False  # mixed bytes, or a group the store only half covers
    return True


@per_object(64)
def _fn_writes(fn: Function):
    return [(ins, w) for ins in fn.instructions() if (w := shared_write(ins)) is not None]


def _same_value(a: Reg, b: Reg, defs) -> bool:
    """Two registers that hold the same value: one register, or equal one-definition instructions."""
    if a == b:
        return True
    da, db = defs.get(a.name), defs.get(b.name)
    return da is not None and db is not None and da.opcode == db.opcode and da.operands[1:] == db.operands[1:]


def _warp_range(g: Graph, block: int, w: Reg, defs, warps: int) -> tuple[int, int]:
    """The warp indices that can reach ``block``: [0, warps) narrowed by the branches it is control
    dependent on that compare the warp index ``w`` with a constant (``setp.lt %p, w, 4``)."""
    lo, hi = 0, warps
    for (x, y) in g.cdeps[block]:
        blk = g.blocks[x]
        last = blk.instrs[-1] if blk.instrs else None
        if last is None or last.base != "bra" or last.guard is None or len(blk.succs) != 2:
            continue
        setp = defs.get(last.guard.reg.name)
        if setp is None or setp.base != "setp" or len(setp.operands) != 3:
            continue
        _, a, c = setp.operands
        if not isinstance(a, Reg) or not isinstance(c, Imm) or not isinstance(c.value, int) \
                or not _same_value(a, w, defs):
            continue
        holds = (y == blk.succs[0]) != last.guard.negated
        cmp = setp.modifiers[0]
        if not holds:
            cmp = {"lt": "ge", "ge": "lt", "le": "gt", "gt": "le", "eq": "ne", "ne": "eq"}.get(cmp, "")
        v = c.value
        if cmp == "lt":
            hi = min(hi, v)
        elif cmp == "le":
            hi = min(hi, v + 1)
        elif cmp == "gt":
            lo = max(lo, v + 1)
        elif cmp == "ge":
            lo = max(lo, v)
        elif cmp == "eq":
            lo, hi = max(lo, v), min(hi, v + 1)
    return lo, hi


def warp_tables(module: Module, fn: Function, g: Graph, dims) -> dict[int, Reg]:
    """Loads ``ld.shared.{b8,u8,s8} [a + c]`` with ``a = sym + w`` (one definition each) that read a
    warp-indexed byte table, keyed by ``id(instr)`` -> ``w`` (the caller checks ``w`` is exactly
    ``%tid.x >> 5``).  The table is ``sym + c + [first, last warp]`` over the warps that can reach
the load (``_warp_range``); the lookup is warpgroup-uniform when
    ``sym + c`` is 4-aligned and every write that may reach the table is a constant store whose
    bytes agree within each aligned group of four, every other write provably misses it (its
    address bounded by ``address_interval``: single definitions, the write's guard, and pipeline
    stages kept in loop counters -- Triton's three-stage rings of mbarriers and buffers; mbarrier
    waits write nothing).  Assumed, not proved: a bulk (TMA) copy, whose extent is
    the tensor map's run-time box, does not reach the table when it starts below it (the address
    it starts at is still bounded)."""
    if dims is None or fn.kind != "entry":
        return {}
    warps = -(-dims[0] * dims[1] * dims[2] // 32)
    defs = single_defs(fn)
    offsets = shared_layout(module, fn).offsets
    block_of = {id(i): b.index for b in g.blocks for i in b.instrs}
    out: dict[int, Reg] = {}
    for ins in fn.instructions():
        if id(ins) not in block_of:
            continue
        if ins.base != "ld" or ".shared" not in ins.opcode or ins.modifiers[-1] not in ("b8", "u8", "s8") \
                or any(m.startswith("v") and m[1:].isdigit() for m in ins.modifiers) or len(ins.operands) != 2:
            continue
        addr = ins.operands[1]
        if not isinstance(addr, Addr) or not isinstance(addr.base, Reg):
            continue
        add = defs.get(addr.base.name)
        if add is None or add.base != "add" or len(add.operands) != 3:
            continue
        x, y = add.operands[1:]
        for s_op, w in ((x, y), (y, x)):
            s_iv = shared_interval(s_op, defs, None)
            if s_iv is None or s_iv[0] is None or s_iv[1] != s_iv[2] or not isinstance(w, Reg):
                continue
            sym, c = s_iv[0], s_iv[1] + addr.offset
            if sym not in offsets or offsets[sym] % 4 or c % 4:
                continue
            first, end = _warp_range(g, block_of[id(ins)], w, defs, warps)
            if first >= end:
                continue
            if _table_is_group_uniform(fn, defs, sym, c + first, c + end, dims[0] * dims[1] * dims[2] - 1):
                out[id(ins)] = w
    return out


def _table_is_group_uniform(fn: Function, defs, sym: str, lo: int, hi: int, tid_max: int) -> bool:
    written = False
    for ins, (addr, width) in _fn_writes(fn):
        if not isinstance(addr, Addr) or addr.base is None:
            return False
        iv = address_interval(fn, ins, addr.base, defs, tid_max)
        if iv is None:
            return False
        if iv[0] != sym:
            if iv[0] is None:
                return False  # an absolute shared address: it may be anywhere
            continue  # another variable: variables never overlap
        start_lo, start_hi = iv[1] + addr.offset, iv[2] + addr.offset
        if start_lo >= hi:
            continue
        if width is None:
            if start_hi < lo:
                continue  # the assumption of warp_tables' doc
            return False
        if start_hi + width <= lo:
            continue
        if start_lo != start_hi or not _group_uniform_bytes(ins, start_lo, lo, hi):
            return False
        written = True
    return written
