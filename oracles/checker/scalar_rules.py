"""Spec layer: the undefined and unspecified cases of the scalar instructions (PTX ISA 9.7.1-9.7.13),
so that compile pairs are judged only on programs whose results the ISA fixes.  One small class
per rule; each quotes the ISA text it enforces and fires only where the case is certain from the
program text (a constant operand, a path with no definition), never on a guess:

- ``spec.scalar.div-by-zero``: ``div``/``rem`` on integers by a divisor that is the constant 0.
- ``spec.scalar.carry-in-undefined``: ``addc``/``subc``/``madc`` reached on some path with no
  ``.cc`` instruction before it since the function's entry or a call.
- ``spec.scalar.fns-base``: ``fns`` with a constant base above 31.
- ``spec.scalar.outside-membermask``: ``shfl``/``vote``/``match``/``redux.sync``/``bar.warp.sync`` that every lane of
  a full warp executes (no guard, no divergent control, a block of whole warps) with a constant
  membermask that leaves a lane out.
- ``spec.scalar.nondeterministic-sreg`` (info): a read of a special register whose value the
  machine picks (``%clock``, ``%smid``...): the program's outputs may differ run to run.

The reference interpreter gives UNDEF in the same cases at run time (oracles/reference).
"""
from __future__ import annotations

from dataclasses import dataclass

from fuzzptx.ptx.ir import Imm, Instr, Reg

from .context import FnCtx
from .findings import Sink
from .flow import solve_forward
from .spec_rules import const_values
from .uniformity import block_dims

_INT_TYPES = ("u16", "u32", "u64", "s16", "s32", "s64")


def _line(ins: Instr) -> int | None:
    return ins.loc.line if ins.loc else None


def _value(op, consts: dict[str, int]) -> int | None:
    if isinstance(op, Imm) and isinstance(op.value, int):
        return op.value
    if isinstance(op, Reg):
        return consts.get(op.name)
    return None


@dataclass(frozen=True)
class DivByZero:
    """PTX ISA 9.7.1.8 div / 9.7.1.9 rem, Notes: "Division by zero yields an unspecified,
    machine-specific value." """

    rule = "spec.scalar.div-by-zero"

    def check(self, ctx: FnCtx, sink: Sink, consts: dict[str, int]) -> None:
        for b in ctx.g.blocks:
            for ins in b.instrs:
                if ins.base not in ("div", "rem") or not any(t in ins.modifiers for t in _INT_TYPES):
                    continue
                if len(ins.operands) == 3 and _value(ins.operands[2], consts) == 0:
                    sink.add(self.rule, "error", _line(ins),
                             f"{ins.opcode} divides by the constant 0: \"Division by zero yields an unspecified, "
                             "machine-specific value\" (PTX ISA, div/rem)")


@dataclass(frozen=True)
class CarryInUndefined:
    """PTX ISA 9.7.2 Extended-Precision Integer Arithmetic: "No other instructions access the
    condition code, and there is no support for setting, clearing, or testing the condition code.
    The condition code register is not preserved across calls"."""

    rule = "spec.scalar.carry-in-undefined"

    def check(self, ctx: FnCtx, sink: Sink, consts: dict[str, int]) -> None:
        if not any(i.base in ("addc", "subc", "madc") for b in ctx.g.blocks for i in b.instrs):
            return

        def step(state: bool, ins: Instr) -> bool:
            """True: CC.CF written on every path so far."""
            if ins.base == "call":
                return False
            if "cc" in ins.modifiers and ins.base in ("add", "sub", "mad", "addc", "subc", "madc"):
                return state if ins.guard is not None else True  # a guarded write may not happen
            return state

        def transfer(b: int, state: bool) -> bool:
            for ins in ctx.g.blocks[b].instrs:
                state = step(state, ins)
            return state

        ins_at = solve_forward(ctx.g, False, transfer, lambda states: all(states))
        for b, state in ins_at.items():
            for ins in ctx.g.blocks[b].instrs:
                if ins.base in ("addc", "subc", "madc") and not state:
                    sink.add(self.rule, "error", _line(ins),
                             f"{ins.opcode} reads CC.CF, which no .cc instruction wrote on some path since the "
                             "function's entry or a call (\"The condition code register is not preserved across "
                             "calls\"; nothing else sets it: PTX ISA 9.7.2)")
                state = step(state, ins)


@dataclass(frozen=True)
class FnsBase:
    """PTX ISA fns: "Operand base must be <= 31, otherwise behavior is undefined." """

    rule = "spec.scalar.fns-base"

    def check(self, ctx: FnCtx, sink: Sink, consts: dict[str, int]) -> None:
        for b in ctx.g.blocks:
            for ins in b.instrs:
                if ins.base != "fns" or len(ins.operands) != 4:
                    continue
                v = _value(ins.operands[2], consts)
                if v is not None and (v & 0xFFFFFFFF) > 31:
                    sink.add(self.rule, "error", _line(ins),
                             f"fns with base {v & 0xFFFFFFFF}: \"Operand base must be <= 31, otherwise behavior is "
                             "undefined\" (PTX ISA, fns)")


_MASK_AT = {"shfl": 4, "vote": 2, "match": 2, "redux": 2}


@dataclass(frozen=True)
class OutsideMembermask:
    """PTX ISA shfl.sync / vote.sync / match.sync / redux.sync / bar.warp.sync: "The behavior of
    <op> is undefined if the executing thread is not in the membermask." """

    rule = "spec.scalar.outside-membermask"

    def check(self, ctx: FnCtx, sink: Sink, consts: dict[str, int]) -> None:
        dims = block_dims(ctx.fn, getattr(ctx.module, "preamble", ()))
        whole = dims is not None and (dims[0] * dims[1] * dims[2]) % 32 == 0
        entry_kernel = ctx.fn.kind == "entry"
        for b in ctx.g.blocks:
            if ctx.g.cdeps[b.index]:
                continue  # under divergent control: which lanes run it is the program's business
            for ins in b.instrs:
                at = 0 if ins.base == "bar" and "warp" in ins.modifiers else _MASK_AT.get(ins.base)
                if at is None or ins.guard is not None or "sync" not in ins.modifiers or len(ins.operands) <= at:
                    continue
                mk = _value(ins.operands[at], consts)
                if mk is None:
                    continue
                mk &= 0xFFFFFFFF
                if mk & 1 == 0 or (whole and entry_kernel and mk != 0xFFFFFFFF):
                    lane = next(i for i in range(32) if not mk >> i & 1)
                    sink.add(self.rule, "error", _line(ins),
                             f"{ins.opcode} runs on every lane of the warp but its membermask {mk:#010x} leaves out "
                             f"lane {lane}: \"The behavior of {ins.opcode} is undefined if the executing thread is "
                             "not in the membermask\" (PTX ISA)")


_VOLATILE = ("%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi", "%smid",
             "%nsmid", "%warpid", "%nwarpid", "%gridid", "%total_smem_size", "%aggr_smem_size", "%current_graph_exec")


@dataclass(frozen=True)
class NondeterministicSreg:
    """PTX ISA 10 Special Registers: %warpid "is volatile"; %smid: "The SM identifier numbering is
    not guaranteed to be contiguous" and may change; %clock/%clock64/%globaltimer are counters.
    Not undefined, but a program that stores them is not reproducible: two builds may differ."""

    rule = "spec.scalar.nondeterministic-sreg"

    def check(self, ctx: FnCtx, sink: Sink, consts: dict[str, int]) -> None:
        for b in ctx.g.blocks:
            for ins in b.instrs:
                for op in ins.operands[1:]:
                    name = op.name if isinstance(op, Reg) else None
                    if name in _VOLATILE or (name or "").startswith(("%envreg", "%pm")):
                        sink.add(self.rule, "info", _line(ins),
                                 f"reads {name}, whose value the machine picks: outputs that depend on it differ "
                                 "between runs and builds")


RULES = (DivByZero(), CarryInUndefined(), FnsBase(), OutsideMembermask(), NondeterministicSreg())


def check_function(ctx: FnCtx, sink: Sink) -> None:
    consts: dict[str, int] | None = None
    wanted = {"div", "rem", "fns", "shfl", "vote", "match", "redux"}
    if any(i.base in wanted for b in ctx.g.blocks for i in b.instrs):
        consts = const_values(ctx)  # the spec layer's folder: registers with one constant definition
    for rule in RULES:
        rule.check(ctx, sink, consts or {})
