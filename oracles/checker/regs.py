"""Registers: declared types per function, tensor-core operand roles, and defs/uses.

``defs_uses`` is ``fuzzptx.ptx.dataflow``'s (names only, memoised on the instruction); this module
adds what the checker needs on top: the accumulator / A-fragment registers of a wgmma.
"""
from __future__ import annotations


from fuzzptx import isa
from fuzzptx.perf import kept_on_node, per_object
from fuzzptx.ptx.dataflow import defs_uses_names
from fuzzptx.ptx.ir import Function, Imm, Instr, Reg, RegDecl, Vec, registers_in, walk

# Special registers and their types (PTX ISA 10); a dotted name's stem decides.
SPECIAL_TYPES = {
    "%tid": ".u32", "%ntid": ".u32", "%laneid": ".u32", "%warpid": ".u32", "%nwarpid": ".u32",
    "%ctaid": ".u32", "%nctaid": ".u32", "%smid": ".u32", "%nsmid": ".u32", "%gridid": ".u64",
    "%clusterid": ".u32", "%nclusterid": ".u32", "%cluster_ctaid": ".u32", "%cluster_nctaid": ".u32",
    "%cluster_ctarank": ".u32", "%cluster_nctarank": ".u32", "%is_explicit_cluster": ".pred",
    "%lanemask_eq": ".u32", "%lanemask_le": ".u32", "%lanemask_lt": ".u32", "%lanemask_ge": ".u32",
    "%lanemask_gt": ".u32", "%clock": ".u32", "%clock_hi": ".u32", "%clock64": ".u64",
    "%globaltimer": ".u64", "%globaltimer_lo": ".u32", "%globaltimer_hi": ".u32",
    "%dynamic_smem_size": ".u32", "%total_smem_size": ".u32", "%aggr_smem_size": ".u32",
    "%current_graph_exec": ".u64",
}


def special_type(name: str) -> str | None:
    stem = name.split(".", 1)[0]
    if stem in SPECIAL_TYPES:
        return SPECIAL_TYPES[stem]
    if stem.startswith("%envreg") or stem.startswith("%pm"):
        return ".u32"
    return None


@per_object(64)
def declared_types(fn: Function) -> dict[str, str]:
    """Register name -> declared type (``.f32``; vector registers as ``.v4.f32``), ``%r<N>`` expanded.
    Kept per function (three checker layers ask): the caller must not change the dict."""
    out: dict[str, str] = {}
    for p in fn.params + fn.returns:
        if p.space == ".reg":
            out[p.name] = p.type
    for stmt in walk(fn.body or ()):
        if isinstance(stmt, RegDecl):
            t = (stmt.vector + stmt.type) if stmt.vector else stmt.type
            for name in stmt.expand():
                out[name] = t
    return out


@kept_on_node("_checker_defs_uses")
def defs_uses(instr: Instr) -> tuple[frozenset[str], frozenset[str]]:
    """Names of the registers ``instr`` writes and reads (guard included in reads), kept on the
    instruction: the checker's passes ask each instruction ~6 times (~3,000 calls per program)."""
    return _defs_uses(instr)


# The same instruction text recurs across programs (a campaign worker judges thousands of
# generated programs with the same register names), and the answer depends only on these fields.
_BY_VALUE: dict = {}


def _defs_uses(instr: Instr) -> tuple[frozenset[str], frozenset[str]]:
    # an emitted instruction carries its text (``emit_located``): the same text is the same
    # value, and a string key hashes and compares far faster than the operand tuple
    key = instr.__dict__.get("_text") or (instr.opcode, instr.operands, instr.guard)
    hit = _BY_VALUE.get(key)
    if hit is None:
        if len(_BY_VALUE) > 100_000:
            _BY_VALUE.clear()
        hit = _BY_VALUE[key] = defs_uses_names(instr)
    return hit


# ------------------------------------------------------------------ wgmma roles


def is_wgmma(instr: Instr) -> bool:
    return instr.opcode[:15] == "wgmma.mma_async"


def is_fence(instr: Instr) -> bool:
    return instr.opcode[:11] == "wgmma.fence"


def is_commit(instr: Instr) -> bool:
    return instr.opcode[:18] == "wgmma.commit_group"


def is_wait(instr: Instr) -> bool:
    return instr.opcode[:16] == "wgmma.wait_group"


def wait_n(instr: Instr) -> int | None:
    if instr.operands and isinstance(instr.operands[0], Imm) and isinstance(instr.operands[0].value, int):
        return instr.operands[0].value
    return None


@kept_on_node("_checker_wgmma_regs")
def wgmma_regs(instr: Instr) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(accumulator D, A-fragment, descriptor) register names of a wgmma; A is empty with an A descriptor."""
    return _wgmma_regs(instr)


def _wgmma_regs(instr: Instr) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    ops = instr.operands
    if not ops:
        return frozenset(), frozenset(), frozenset()
    acc = frozenset(r.name for r in registers_in(ops[0]))
    a: frozenset[str] = frozenset()
    desc: set[str] = set()
    if len(ops) > 1:
        if isinstance(ops[1], Vec):
            a = frozenset(r.name for r in registers_in(ops[1]))
        elif isinstance(ops[1], Reg):
            desc.add(ops[1].name)
    if len(ops) > 2 and isinstance(ops[2], Reg):
        desc.add(ops[2].name)
    return acc, a, frozenset(desc)


def wgmma_shape(instr: Instr) -> str:
    for m in instr.modifiers:
        if m.startswith("m") and "n" in m and "k" in m:
            return m
    return ""


def catalogue_families() -> frozenset[str]:
    return frozenset(f.family for f in isa.forms())


class RegisterBits:
    """Register names numbered as bits of an int: the analyses that iterate to a fixed point keep
    register sets as int bitsets (union, difference and test are one machine operation)."""

    def __init__(self) -> None:
        self.bit: dict[str, int] = {}  # name -> its single-bit mask
        self._sets: dict[frozenset, int] = {}

    def of(self, names: frozenset) -> int:
        """``mask(names)``, kept per set: ``defs_uses`` hands out one frozenset per distinct
        operand list (its hash is cached), so most instructions' masks are one lookup."""
        m = self._sets.get(names)
        if m is None:
            m = self._sets[names] = self.mask(names)
        return m

    def mask(self, names) -> int:
        m = 0
        for n in names:
            b = self.bit.get(n)
            if b is None:
                b = self.bit[n] = 1 << len(self.bit)
            m |= b
        return m


def function_bits(ctx) -> RegisterBits:
    """One register numbering per function context, shared by the analyses that use bitsets
    (dead code, C7511, C7512): each set's mask is then worked out once per function."""
    d = ctx.__dict__
    bits = d.get("_register_bits")
    if bits is None:
        bits = d["_register_bits"] = RegisterBits()
    return bits
