"""Address values at a program point: affine forms over loop counters, for the shared-memory
ranges the uniformity and proxy rules compare.

``uniformity.shared_interval`` follows registers with one definition.  Compilers keep a
pipeline's stage offsets in registers written several times -- a loop counter and its multiples
advanced together, and ``stage = i mod S`` spelt as ``k*i - k*S*floor(i/S)`` with ``floor`` by a
magic multiply (``mul.hi.u64 q, i, 0xAAAB..; shr.u64 q, q, 1`` is ``i / 3``) -- so a stage
buffer's address has no single definition, and a rule that cannot bound it must assume it
meets everything.  ``interval_at(fn, ins, op, tid_max)`` evaluates ``op`` as ``ins`` reads it:

- walking back from ``ins`` to the definition that reaches it (through blocks with one
  predecessor; at a merge every predecessor must give the same value);
- at a loop header, a *basic induction variable* -- one unguarded ``add r, r, c`` in the loop,
  in a block that dominates every latch and lies in no inner loop, so it runs once per
  iteration -- is ``entry + c*n`` with ``n`` the loop's iteration count, one atom per loop
  shared by all its counters (their relation is what proves the stage bound);
- ``k*A - k*d*floor(A/d)`` is ``k*(A mod d)``, bounded to ``[0, k*(d-1)]``; arithmetic is exact
  modulo the register width (a truncating ``cvt`` keeps the form), and ``floor`` is recognised
  from ``div.u`` by a constant or a magic multiply whose constant is exact for every operand
  (Granlund-Montgomery: ``2^(N+s) <= M*d <= 2^(N+s) + 2^s``).

The result is ``(symbol or None, lo, hi)`` as ``shared_interval``'s, or None when some atom is
unbounded.  Anything else (a guarded definition, a merge of different values, an operation
outside the list) is an opaque atom, which leaves the address unbounded -- never a guess.
"""
from __future__ import annotations

from dataclasses import dataclass

from fuzzptx.perf import per_object
from fuzzptx.ptx.cfg import build_cfg
from fuzzptx.ptx.ir import Function, Imm, Instr, Reg, Sym

from .regs import defs_uses

_MAX_DEPTH = 48
_BOUNDED_KINDS = ("tid", "bnd", "mod")


@dataclass(frozen=True)
class Form:
    """``sum(coeff * atom) + const``; atoms are tuples: ``("sym", name)``, ``("tid", tid_max)``,
    ``("bnd", key, lo, hi)``, ``("mod", A, d)``, ``("floor", A, d, bits)``, ``("n", header)`` and
    opaque ``("op", key)``.  Coefficients are plain integers; equality is taken modulo 2**bits."""

    terms: tuple  # sorted ((atom, coeff), ...), no zero coefficient
    const: int = 0

    @staticmethod
    def of(terms: dict, const: int = 0) -> "Form":
        return Form(tuple(sorted(((a, c) for a, c in terms.items() if c), key=repr)), const)

    @staticmethod
    def atom(a) -> "Form":
        return Form(((a, 1),), 0)

    def scaled(self, k: int) -> "Form":
        return Form.of({a: c * k for a, c in self.terms}, self.const * k)

    def plus(self, other: "Form", sign: int = 1) -> "Form":
        t = dict(self.terms)
        for a, c in other.terms:
            t[a] = t.get(a, 0) + sign * c
        return Form.of(t, self.const + sign * other.const)

    def wrapped(self, bits: int) -> "Form":
        """The same value modulo 2**bits, coefficients as signed representatives."""
        m = 1 << bits
        sgn = lambda v: ((v + m // 2) % m) - m // 2  # noqa: E731
        return Form.of({a: sgn(c) for a, c in self.terms}, sgn(self.const))


def _opaque(*key) -> Form:
    return Form.atom(("op",) + key)


def _bits(ins: Instr) -> int:
    for m in reversed(ins.modifiers):
        if m[:1] in "busf" and m[1:].isdigit():
            return int(m[1:])
    return 32


def _dest_bits(ins: Instr) -> int:
    types = [int(m[1:]) for m in ins.modifiers if m[:1] in "busf" and m[1:].isdigit()]
    if not types:
        return 64
    return types[0] if ins.base == "cvt" else types[-1]


def _udiv_magic(mult: int, shift: int, bits: int) -> int | None:
    """The divisor ``d`` for which ``floor(x * mult / 2**(bits + shift)) == floor(x / d)`` for every
    ``bits``-wide unsigned ``x``, or None."""
    mult &= (1 << bits) - 1
    if mult <= 1:
        return None
    top = 1 << (bits + shift)
    for d in {top // mult, top // mult + 1}:
        if d > 1 and top <= mult * d <= top + (1 << shift):
            return d
    return None


class _Evaluator:
    """Per-function state: the CFG, loops, dominators, every instruction's position."""

    def __init__(self, fn: Function, tid_max: int | None) -> None:
        self.cfg = build_cfg(fn)
        self.tid_max = tid_max
        self.pos = {id(ins): (b.index, k) for b in self.cfg.blocks for k, ins in enumerate(b.instrs)}
        self.loops = {lp.header: lp for lp in self.cfg.loops()}
        self.body_of = {h: frozenset(lp.body) for h, lp in self.loops.items()}
        count: dict[str, int] = {}
        self.def_sites: dict[str, list] = {}
        for b in self.cfg.blocks:
            for k, ins in enumerate(b.instrs):
                for d in defs_uses(ins)[0]:
                    count[d] = count.get(d, 0) + 1
                    self.def_sites.setdefault(d, []).append((b.index, k, ins))
        self.single = {r: s[0] for r, s in self.def_sites.items() if len(s) == 1 and s[0][2].guard is None}
        self.memo: dict = {}
        self.busy: set = set()

    def width(self, name: str) -> int:
        """The widest type any definition of ``name`` writes (a ``cvt`` writes its first type)."""
        return max((_dest_bits(ins) for _b, _k, ins in self.def_sites.get(name, ())), default=64)

    # -------------------------------------------------------------- registers at a point

    def reg_at(self, name: str, block: int, pos: int, depth: int) -> Form:
        if name.startswith("%") and "." in name and name not in self.def_sites:
            if name == "%tid.x" and self.tid_max is not None:
                return Form.atom(("tid", self.tid_max))
            return _opaque("special", name)
        one = self.single.get(name)
        if one is not None:
            return self.instr_value(one[2], one[0], one[1], name, depth)
        if name not in self.def_sites:
            return _opaque("in", name)
        instrs = self.cfg.blocks[block].instrs
        for j in range(min(pos, len(instrs)) - 1, -1, -1):
            if name in defs_uses(instrs[j])[0]:
                return self.instr_value(instrs[j], block, j, name, depth)
        return self.entry_of(name, block, depth)

    def entry_of(self, name: str, block: int, depth: int) -> Form:
        """The value of ``name`` on entry to ``block``."""
        key = (name, block)
        if key in self.memo:
            return self.memo[key]
        if key in self.busy or depth > _MAX_DEPTH:
            return _opaque("phi", name, block)
        self.busy.add(key)
        try:
            out = self._entry_of(name, block, depth + 1)
        finally:
            self.busy.discard(key)
        self.memo[key] = out
        return out

    def _entry_of(self, name: str, block: int, depth: int) -> Form:
        preds = [p for p in self.cfg.blocks[block].preds if p in self.cfg.reachable()]
        if not preds:
            return _opaque("in", name)
        body = self.body_of.get(block)
        if body is not None:
            outside = [p for p in preds if p not in body]
            inside = [(b, k, i) for b, k, i in self.def_sites[name] if b in body]
            if not outside:
                return _opaque("phi", name, block)
            start = self._same([self.at_end(name, p, depth) for p in outside], name, block)
            if not inside:
                return start
            step = self._iv_step(name, block, inside)
            if step is None:
                return _opaque("phi", name, block)
            return start.plus(Form.atom(("n", block)).scaled(step))
        return self._same([self.at_end(name, p, depth) for p in preds], name, block)

    def _same(self, forms: list, name: str, block: int) -> Form:
        return forms[0] if all(f == forms[0] for f in forms[1:]) else _opaque("phi", name, block)

    def at_end(self, name: str, block: int, depth: int) -> Form:
        return self.reg_at(name, block, len(self.cfg.blocks[block].instrs), depth + 1)

    def _iv_step(self, name: str, header: int, inside: list) -> int | None:
        """The step of a basic induction variable of the loop at ``header`` (see the module doc)."""
        if len(inside) != 1:
            return None
        b, _k, ins = inside[0]
        ops = ins.operands
        if ins.base not in ("add", "sub") or ins.guard is not None or len(ops) != 3 \
                or not isinstance(ops[1], Reg) or ops[1].name != name or not isinstance(ops[2], Imm) \
                or not isinstance(ops[2].value, int):
            return None
        lp = self.loops[header]
        if any(b not in self.cfg.dominators(latch) for latch in lp.latches):
            return None
        if any(b in body and h != header and body < self.body_of[header] for h, body in self.body_of.items()):
            return None  # inside an inner loop: it may run more than once per iteration
        return ops[2].value if ins.base == "add" else -ops[2].value

    # -------------------------------------------------------------- instructions

    def op_at(self, op, block: int, pos: int, depth: int) -> Form:
        if isinstance(op, Imm):
            return Form((), op.value) if isinstance(op.value, int) else _opaque("imm", repr(op))
        if isinstance(op, Sym):
            return Form.atom(("sym", op.name))
        if isinstance(op, Reg):
            return self.reg_at(op.name, block, pos, depth + 1)
        return _opaque("operand", repr(op))

    def instr_value(self, ins: Instr, block: int, pos: int, name: str, depth: int) -> Form:
        key = ("def", id(ins), name)
        if key in self.memo:
            return self.memo[key]
        if key in self.busy or depth > _MAX_DEPTH or ins.guard is not None:
            return _opaque("def", id(ins), name)
        self.busy.add(key)
        try:
            out = self._instr_value(ins, block, pos, depth + 1)
        finally:
            self.busy.discard(key)
        out = out if out is not None else _opaque("def", id(ins), name)
        self.memo[key] = out
        return out

    def _instr_value(self, ins: Instr, block: int, pos: int, depth: int) -> Form | None:
        base, ops = ins.base, ins.operands
        if len(ops) < 2 or not isinstance(ops[0], Reg):
            return None
        srcs = ops[1:]
        bits = _bits(ins)
        val = lambda o: self.op_at(o, block, pos, depth)  # noqa: E731
        if base in ("mov", "cvta") and len(srcs) == 1:
            return val(srcs[0])
        if base == "cvt" and len(srcs) == 1:
            types = [m for m in ins.modifiers if m[:1] in "usb" and m[1:].isdigit()]
            if len(types) == 2 and int(types[0][1:]) <= int(types[1][1:]):
                return val(srcs[0])  # a truncation keeps the value modulo the narrower width
            inner = val(srcs[0])
            rng = _range(inner.wrapped(int(types[1][1:])) if len(types) == 2 else inner)
            return inner if rng is not None and rng[0] is None and 0 <= rng[1] and rng[2] < 1 << 31 else None
        if base in ("add", "sub") and len(srcs) == 2 and ".sat" not in ins.opcode and ".f" not in ins.opcode[3:]:
            return val(srcs[0]).plus(val(srcs[1]), 1 if base == "add" else -1)
        if base == "neg" and len(srcs) == 1:
            return val(srcs[0]).scaled(-1)
        if base == "not" and len(srcs) == 1:
            return val(srcs[0]).scaled(-1).plus(Form((), -1))
        if base in ("mul", "mad", "shl") and len(srcs) >= 2 and (base == "shl" or ".lo" in ins.opcode):
            a, b = val(srcs[0]), val(srcs[1])
            if base == "shl":
                if b.terms or not 0 <= b.const < bits:
                    return None
                prod = a.scaled(1 << b.const)
            elif not b.terms:
                prod = a.scaled(b.const)
            elif not a.terms:
                prod = b.scaled(a.const)
            else:
                return None
            return prod.plus(val(srcs[2])) if base == "mad" and len(srcs) == 3 else prod
        if base == "div" and len(srcs) == 2 and ".u" in ins.opcode and isinstance(srcs[1], Imm) \
                and isinstance(srcs[1].value, int) and srcs[1].value > 0:
            a = val(srcs[0]).wrapped(bits)
            return Form.atom(("floor", a, srcs[1].value, bits)) if srcs[1].value > 1 else a
        if base == "rem" and len(srcs) == 2 and ".u" in ins.opcode and isinstance(srcs[1], Imm) \
                and isinstance(srcs[1].value, int) and srcs[1].value > 0:
            return Form.atom(("bnd", id(ins), 0, srcs[1].value - 1))
        if base == "mul" and ".hi" in ins.opcode and ".u" in ins.opcode and len(srcs) == 2 \
                and isinstance(srcs[1], Imm) and isinstance(srcs[1].value, int):
            return Form.atom(("mulhi", val(srcs[0]).wrapped(bits), srcs[1].value, bits))
        if base == "shr" and len(srcs) == 2 and isinstance(srcs[1], Imm) and ".s" not in ins.opcode:
            a = val(srcs[0])
            s = srcs[1].value
            if len(a.terms) == 1 and a.const == 0 and a.terms[0][1] == 1 and a.terms[0][0][0] == "mulhi":
                _, arg, mult, width = a.terms[0][0]
                d = _udiv_magic(mult, s, width) if width == bits else None
                return Form.atom(("floor", arg, d, bits)) if d else None
            rng = _range(a.wrapped(bits))
            if rng is not None and rng[0] is None and rng[1] >= 0:
                return Form.atom(("bnd", id(ins), rng[1] >> s, rng[2] >> s))
            return None
        if base == "and" and len(srcs) == 2 and isinstance(srcs[1], Imm) and isinstance(srcs[1].value, int) \
                and 0 <= srcs[1].value < 1 << 31:
            return Form.atom(("bnd", id(ins), 0, srcs[1].value))
        if base == "bfe" and len(srcs) == 3 and ".u" in ins.opcode and isinstance(srcs[2], Imm) \
                and isinstance(srcs[2].value, int):
            return Form.atom(("bnd", id(ins), 0, (1 << min(srcs[2].value, bits)) - 1))
        return None


def _simplified(form: Form, bits: int) -> Form:
    """``k*A - k*d*floor(A/d)`` rewritten as ``k*(A mod d)`` (exact modulo 2**bits)."""
    m = 1 << bits
    form = form.wrapped(bits)
    changed = True
    while changed:
        changed = False
        coeff = dict(form.terms)
        for atom, f in form.terms:
            if atom[0] != "floor" or atom[3] < bits:
                continue
            _, arg, d, _w = atom
            unit = next(((a, c) for a, c in arg.terms if c in (1, -1)), None)
            if unit is None:
                continue
            k = (coeff.get(unit[0], 0) * unit[1]) % m
            if not k or (f + k * d) % m or any((coeff.get(a, 0) - k * c) % m for a, c in arg.terms):
                continue
            rest = {a: c for a, c in coeff.items() if a != atom and a not in dict(arg.terms)}
            rest[("mod", arg, d)] = k
            form = Form.of(rest, form.const - k * arg.const).wrapped(bits)
            changed = True
            break
    return form


def _range(form: Form):
    """(symbol or None, lo, hi) when every atom but one unit symbol is bounded; else None."""
    sym, lo, hi = None, form.const, form.const
    for atom, c in form.terms:
        kind = atom[0]
        if kind == "sym":
            if c != 1 or sym is not None:
                return None
            sym = atom[1]
            continue
        if kind not in _BOUNDED_KINDS:
            return None
        a_lo, a_hi = (0, atom[1]) if kind == "tid" else (atom[2], atom[3]) if kind == "bnd" else (0, atom[2] - 1)
        lo += min(c * a_lo, c * a_hi)
        hi += max(c * a_lo, c * a_hi)
    return sym, lo, hi


@per_object(64)
def _evaluators(fn: Function) -> dict:
    return {}


def interval_at(fn: Function, ins: Instr, op, tid_max: int | None):
    """``(symbol or None, lo, hi)`` bounding the value of register ``op`` as ``ins`` reads it
    (the module doc says how); None where it is not bounded or ``ins`` is not in ``fn``."""
    if not isinstance(op, Reg):
        return None
    ev = _evaluators(fn).get(tid_max)
    if ev is None:
        ev = _evaluators(fn)[tid_max] = _Evaluator(fn, tid_max)
    where = ev.pos.get(id(ins))
    if where is None:
        return None
    form = ev.reg_at(op.name, where[0], where[1], 0)
    rng = _range(_simplified(form, ev.width(op.name)))
    if rng is None or (rng[0] is not None and not -(1 << 24) < rng[1] <= rng[2] < 1 << 24):
        return None  # a shared-window address far out of range has wrapped: not trusted
    return rng
