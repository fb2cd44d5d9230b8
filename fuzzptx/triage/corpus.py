"""The corpus of real disagreements: each entry built from code, shrunk, finalized, written.

    python -m fuzzptx.triage.corpus --write corpus/        # regenerate every file and corpus/README.md
    python -m fuzzptx.triage.corpus --list                 # names and signatures

An ``Entry`` builds its program from the catalogue (``minimal_kernel``, the spec's own
forms, ptxas-accepted neighbours), from a small pipeline renderer over the catalogue's
minimal wgmma kernel, or from the hardware benchmarks' builders; ``keep`` is the
shrinker's predicate (what must stay true: a ptxas verdict, a contrast with a variant,
a hardware model), so the written file is the smallest program that still shows it.
Three kinds of disagreement: ``spec!=ptxas`` (the PTX ISA text vs ptxas 13.0.88),
``notes!=ptxas`` (the reverse-engineered ptxas notes, seed 001, vs ptxas) and
``reference!=hardware`` / ``hardware:fault`` (the spec reference vs the H100, hardware
verdicts from the committed records' models).
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

from fuzzptx.warp_builders import wmma_program
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.ir import Imm, Instr, Module, registers_in
from fuzzptx.engine.predicate import rejudged, signature_predicate
from fuzzptx.reduce import Predicate, delete, instruction_count, removable, shrink, statements
from fuzzptx.oracles.ptxas import compile_batch
from fuzzptx import isa
from fuzzptx.isa import warp
from fuzzptx.kernels import minimal_kernel
from fuzzptx.neighbours import neighbours
from fuzzptx.ptx.emit import emit
from fuzzptx.oracles.hardware import HwResult
from fuzzptx.oracles.reference import run_program
from fuzzptx.oracles.reference.result import UNDEF
from fuzzptx.judges import differ
from fuzzptx.oracles.reference import compare
from fuzzptx.oracles.reference import warp_exec
from fuzzptx.oracles.reference.errors import BadAddress
from fuzzptx.builders import wgmma_program
from fuzzptx.ptx.dataflow import defs_uses
from fuzzptx.ptx.ir import Addr

Holds = Predicate


@dataclass(frozen=True)
class Entry:
    name: str  # the file stem
    signature: str
    shows: str  # one sentence: what disagrees with what, and which document it contradicts
    build: Callable[[], Program]
    keep: Callable[[Program], Holds]  # given the built program, the shrink predicate
    judges: tuple[str, ...] = ("ptxas", "checker", "reference")
    hardware: Callable[[Program], object] | None = None  # the H100 verdict (an HwResult) per the records
    defined: bool = True  # where the built program is defined for the reference, the shrunk one must stay so
    budget_s: float = 60.0  # shrink budget
    output: str = ""  # results of instructions whose opcode starts so must reach a global store (not dead code)


# ------------------------------------------------------------------ ptxas predicates


def _compile(programs: Sequence[Program]):
    return compile_batch([p.to_ptx() for p in programs])


def _codes(res) -> set[str]:
    return {d.code for d in res.diagnostics if d.code}


def _first_error(res) -> str | None:
    e = next((d for d in res.diagnostics if d.severity == "error"), None)
    return None if e is None else re.sub(r"\d+", "#", e.message)


def has(pred: Callable[[Instr], bool]) -> Callable[[Program], bool]:
    """The program still holds an instruction matching ``pred`` (keeps the shrinker honest)."""
    return lambda p: any(pred(i) for f in p.module.functions() for i in f.instructions())


def opcode_has(*words: str) -> Callable[[Program], bool]:
    return has(lambda i: all(w in i.opcode for w in words))


def same_rejection(original: Program) -> Holds:
    """ptxas still rejects with the same first error message (digits aside)."""
    want = _first_error(_compile([original])[0])

    def holds(ps: Sequence[Program]) -> list[bool]:
        return [not r.accepted and _first_error(r) == want for r in _compile(ps)]

    return holds


def ptxas_says(*, accepted: bool = True, present: Sequence[str] = (), absent: Sequence[str] = (), exact: bool = False,
               needs: Sequence[Callable[[Program], bool]] = (), contrast: Callable[[Program], Program | None] | None = None,
               contrast_present: Sequence[str] = (), contrast_absent: Sequence[str] = ()) -> Callable[[Program], Holds]:
    """ptxas accepts (or not), prints ``present`` codes and none of ``absent`` (``exact``: no other code);
    every ``needs`` test holds; and ``contrast(p)`` (a variant: the same program minus the ingredient that
    makes the difference) draws ``contrast_present``: so the shrinker cannot keep the verdict by
    deleting what it is about."""
    def make(_original: Program) -> Holds:
        def holds(ps: Sequence[Program]) -> list[bool]:
            ok = [all(n(p) for n in needs) for p in ps]
            variants = [contrast(p) if (contrast and o) else None for p, o in zip(ps, ok)]
            todo = [p for p, o in zip(ps, ok) if o] + [v for v in variants if v is not None]
            res = iter(_compile(todo)) if todo else iter(())
            main = {i: next(res) for i, o in enumerate(ok) if o}
            var = {i: next(res) for i, v in enumerate(variants) if v is not None}
            out = []
            for i, _p in enumerate(ps):
                r = main.get(i)
                good = r is not None and r.accepted == accepted and not r.timed_out
                if good:
                    cs = _codes(r)
                    good = set(present) <= cs and not (cs & set(absent)) and (not exact or cs == set(present))
                if good and contrast is not None:
                    v = var.get(i)
                    good = (v is not None and v.accepted and set(contrast_present) <= _codes(v)
                            and not (_codes(v) & set(contrast_absent)))
                out.append(good)
            return out

        return holds

    return make


# ------------------------------------------------------------------ program builders


def _program(module: Module, out_type: str = "u32", count: int = 64, kernel: str = "k", block: int = 128) -> Program:
    return Program(module, Launch(kernel, (1, 1, 1), (block, 1, 1)), (Buffer("out", out_type, count, "zeros", 0, True),))


def _form(key: str):
    return next(f for f in isa.forms() if f.key == key)


def spec_form(rule: str, pick: Callable = lambda f: True) -> Program:
    """The minimal kernel of a form exactly as the seed's table states it (before the catalogue's fix)."""
    _, when, _ = next(e for e in warp.SPEC_EXCEPTIONS if e[0].rule == rule)
    form = next(f for f in warp.spec_forms() if when(f) and pick(f))
    return _program(minimal_kernel(form))


def neighbour(form_key: str, rule: str, detail: str) -> Program:
    """One of the catalogue's nearest illegal neighbours (``fuzzptx.neighbours``)."""
    case = next(c for c in neighbours(_form(form_key)) if c.rule == rule and c.detail == detail)
    return _program(case.module)


def minimal(form_key: str, edit: Callable[[Instr], Instr] = lambda i: i) -> Program:
    """The catalogue's minimal kernel of a form, each instruction passed through ``edit``."""
    m = minimal_kernel(_form(form_key))
    fn = m.kernels()[0]
    body = tuple(edit(s) if isinstance(s, Instr) else s for s in fn.body)
    return _program(replace(m, items=tuple(replace(i, body=body) if i is fn else i for i in m.items)))


# A pipeline over the minimal m64n8k16 wgmma kernel: tokens fence, w0, w1, commit, wait0, wait1,
# use0, use1, call (a direct call of a .func), icall (an indirect call through a .callprototype).
WG = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16|a=desc"
SIDE = """
.func (.reg .b32 r) side(.reg .b32 x)
{
\tadd.u32 r, x, 1;
\tret;
}
"""


def pipeline(tokens: str) -> Program:
    """The minimal wgmma kernel with its fence..use part replaced by ``tokens`` (rendered as PTX text)."""
    text = emit(minimal_kernel(_form(WG)))
    head, rest = text.split("\twgmma.fence.sync.aligned;\n", 1)
    wg = next(line for line in rest.splitlines() if "mma_async" in line).strip()
    head = head.replace("\t.reg .f32 %d<4>;", "\t.reg .f32 %d<4>;\n\t.reg .f32 %e<4>;\n\t.reg .b32 %x<2>;\n\t.reg .b64 %fp;")
    head = head.replace("\tmov.b32 %d3, 0;", "\tmov.b32 %d3, 0;\n" + "".join(f"\tmov.b32 %e{i}, 0;\n" for i in range(4))
                        + "\tmov.b32 %x0, 7;")
    ops = {
        "fence": ["wgmma.fence.sync.aligned;"], "commit": ["wgmma.commit_group.sync.aligned;"],
        "wait0": ["wgmma.wait_group.sync.aligned 0;"], "wait1": ["wgmma.wait_group.sync.aligned 1;"],
        "w0": [wg], "w1": [wg.replace("%d", "%e")],
        "use0": [f"st.global.f32 [%out_g+{4 * i}], %d{i};" for i in range(4)],
        "use1": [f"st.global.f32 [%out_g+{16 + 4 * i}], %e{i};" for i in range(4)],
        "call": ["call (%x1), side, (%x0);", "st.global.u32 [%out_g+32], %x1;"],
        "icall": ["mov.u64 %fp, side;", "PROTO:", ".callprototype (.reg .b32 _) _ (.reg .b32 _);",
                  "call (%x1), %fp, (%x0), PROTO;", "st.global.u32 [%out_g+32], %x1;"],
    }
    body = [line for t in tokens.split() for line in ops[t]]
    head = head.replace(".visible .entry", (SIDE.strip() + "\n\n" if "call" in tokens else "") + ".visible .entry")
    lines = [line if line.endswith(":") else "\t" + line for line in body]
    return _program(Program.from_ptx("// LAUNCH: kernel=k\n// BUFFER: out type=u32 count=64 init=zeros output\n"
                                     + head + "\n".join(lines) + "\n\tret;\n}\n").module)


def without(word: str, nth: int = 0) -> Callable[[Program], Program | None]:
    """The program minus its ``nth`` instruction whose opcode contains ``word`` (None: no such one)."""
    def variant(p: Program) -> Program | None:
        hits = []
        for fn in p.module.functions():
            if fn.body is None:
                continue
            sts = statements(fn)
            hits += [(fn.name, i) for f_, i in removable(p) if f_ == fn.name
                     and isinstance(sts[i], Instr) and word in sts[i].opcode]
        return delete(p, [hits[nth]]) if len(hits) > nth else None

    return variant


# ------------------------------------------------------------------ hardware models


def e8m13_hardware(p: Program):
    """What the H100 computes for a dense wgmma program: the reference in hardware numerics (every
    wgmma by ``hw_numerics``: fp8 with f32 D an e8m13 accumulator), the model
    ``tests/hw_records/numerics.json`` proves bit for bit against the H100."""
    ref = run_program(replace(p, numerics="hardware"), mode="hardware")
    return HwResult(outputs={b.name: ref.bytes(b.name) for b in p.outputs()})


def _all_defined(ref) -> bool:
    """No undefined behaviour and every output element defined: what the GPU computes is then what
    gets compared (an undefined output would let ptxas drop the instructions that make it)."""
    import numpy as np

    return ref.undefined is None and bool(ref.outputs) and all(not np.any(np.asarray(o.kind) == UNDEF)
                                                               for o in ref.outputs.values())


def spec_vs_hardware_model(model: Callable[[Program], object], drawn: Sequence[str] = ()) -> Callable[[Program], Holds]:
    """Holds where ptxas accepts, the checker finds nothing (a numerics repro should not carry a second,
    unrelated disagreement), the spec reference runs the program with every output defined and the
    hardware model's outputs fall outside the spec's bounds; buffers ``drawn`` keep data drawn at random
    (not zeros: the domain the model was proved on)."""
    def make(_original: Program) -> Holds:
        def holds(ps: Sequence[Program]) -> list[bool]:
            out = []
            for p, r in zip(ps, _compile(ps)):
                names = {b.name: b.init for b in p.buffers}
                if any(names.get(n, "zeros") in ("zeros", "ones", "iota") for n in drawn):
                    out.append(False)
                    continue
                try:
                    ref = run_program(p)
                    ok = r.accepted and _all_defined(ref) and bool(compare(p, ref, model(p).outputs))
                    out.append(ok and differ.judge(p, ("checker",)).summary().get("checker") == "clean")
                except Exception:
                    out.append(False)
            return out

        return holds

    return make


def shared_rows_16_bytes(p: Program):
    """The H100's wmma in shared memory: rows must be 16-byte aligned (tests/hw_records/warp_forms.json,
    4 of 4 alignment probes trapped 'misaligned address'); the spec asks only for the fragment size."""
    orig = warp_exec._alignment
    warp_exec._alignment = lambda frag, default, eb: max(orig(frag, default, eb), 16)
    try:
        run_program(p)
        return HwResult(outputs={})
    except BadAddress:
        return HwResult(fault="misaligned address")
    finally:
        warp_exec._alignment = orig


def spec_legal_hardware_faults(model: Callable[[Program], object]) -> Callable[[Program], Holds]:
    def make(_original: Program) -> Holds:
        def holds(ps: Sequence[Program]) -> list[bool]:
            out = []
            for p, r in zip(ps, _compile(ps)):
                try:  # cheapest first: ptxas (batched), the H100 model (stops at the trap), the spec reference
                    good = r.accepted and model(p).fault == "misaligned address" and _all_defined(run_program(p))
                except Exception:
                    good = False
                out.append(good)
            return out

        return holds

    return make


def fp8_program() -> Program:
    """A dense e4m3 wgmma with f32 D on random data (the builders' tile plan, K = 32)."""
    f = _form("wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3|a=desc")
    return wgmma_program(f, seed=313422)


def wmma_probe() -> Program:
    """The first alignment probe of the H100 warp-forms run, rebuilt from its record (same seed)."""
    f = _form("wmma.mma.sync.aligned.row.col.m16n16k16.s32.s8.s8.s32")
    return wmma_program(f, space="shared", c_layout="row", d_layout="row", padded=True, seed=267591, align_probe=True)


# ------------------------------------------------------------------ the entries

_NO_ALIGNED = lambda i: replace(i, opcode=i.opcode.replace(".sync.aligned", ".sync")) if i.opcode.startswith("wgmma.mma_async") else i
_WAIT8 = lambda i: replace(i, operands=(Imm.of(8),)) if i.opcode.startswith("wgmma.wait_group") else i
_SP_K32 = "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32"

ENTRIES: tuple[Entry, ...] = (
    Entry("spec_mma_m8n8k4_f16_d_f32_c", "spec!=ptxas|spec-form-rejected|mma.f16.f16",
          "seed 004's mma table lists m8n8k4 with .f16 D and .f32 C (it ties .dtype to .ctype only for m16n8k8/k16);"
          " ptxas rejects it ('.dtype must be .f32 when .ctype is .f32').",
          lambda: spec_form("mma.m8n8k4-f16-d-f32-c"), same_rejection),
    Entry("spec_wmma_f64_one_register", "spec!=ptxas|spec-form-rejected|wmma.load",
          "seed 002's fragment table gives wmma .m8n8k4 .f64 C/D one .f64 register per thread;"
          " ptxas rejects that ('Argument vector size mismatch') and takes two.",
          lambda: spec_form("wmma.f64-acc-regs"), same_rejection),
    Entry("spec_ldmatrix_m8n16_b8", "spec!=ptxas|spec-form-rejected|ldmatrix",
          "seed 004 lists ldmatrix .m8n16 with .type .b8; ptxas rejects plain .b8 for .m8n16"
          " ('Unexpected number of instruction types') and needs .b8x16.b6x16_p32 or .b8x16.b4x16_p64.",
          lambda: spec_form("ldmatrix.m8n16-b8"), same_rejection, judges=("ptxas", "checker")),
    Entry("spec_mma_sp_f16x2_accumulator", "spec!=ptxas|neighbour-accepted:reg-type|mma.sp.f32.f16",
          "the PTX ISA types mma.sp's .f32 D as .f32 registers and dense mma rejects .f16x2 there;"
          " ptxas accepts .f16x2 registers for mma.sp's .f32 D (pinned in fuzzptx/conformance.py).",
          lambda: neighbour(_SP_K32, "mma.sp.reg-type-wrong", "d:.f16x2"),
          ptxas_says(accepted=True, needs=(has(lambda i: i.opcode.startswith("mma.sp")),))),
    Entry("spec_mma_sp_selector_2", "spec!=ptxas|neighbour-accepted:sp-sel|mma.sp.f32.f16",
          "the PTX ISA defines sparsity selectors 0..1 for f16 mma.sp m16n8k32 (and ptxas enforces that for every"
          " other k32 form); ptxas accepts selector 2 with .f32 accumulators.",
          lambda: neighbour(_SP_K32, "mma.sp.imm-out-of-range", "sp_sel=2"),
          ptxas_says(accepted=True, needs=(has(lambda i: i.opcode.startswith("mma.sp") and Imm.of(2) in i.operands),))),
    Entry("spec_wgmma_without_aligned", "spec!=ptxas|missing-aligned-accepted|wgmma.f32.f16",
          "the PTX ISA calls wgmma.mma_async's .aligned qualifier mandatory (seed 000 9.7.15.5.2);"
          " ptxas accepts wgmma.mma_async.sync without .aligned.",
          lambda: minimal(WG, _NO_ALIGNED),
          ptxas_says(accepted=True, needs=(has(lambda i: i.opcode.startswith("wgmma.mma_async") and ".aligned" not in i.opcode),))),
    Entry("spec_wait_group_8", "catalogue!=ptxas|imm-out-of-range:wait_group|wgmma.f32.f16",
          "the catalogue (after seed 001's 8-deep group table) bounds wgmma.wait_group N to 0..7 and the spec says"
          " only 'an integer constant'; ptxas accepts N = 8 (and the wait no longer covers the use: C7514, C7517).",
          lambda: minimal(WG, _WAIT8),
          ptxas_says(accepted=True, needs=(has(lambda i: i.opcode.startswith("wgmma.wait_group") and Imm.of(8) in i.operands),))),
    Entry("notes_wait_commits", "notes!=ptxas|wait-commits-uncommitted|wgmma.f32.f16",
          "seed 001 says wgmma.commit_group closes a stage and wait_group waits for committed groups (and the spec"
          " makes the use undefined); ptxas treats a wait with no commit as committing: no C7517, no serialization.",
          lambda: pipeline("fence w0 wait0 use0"),
          ptxas_says(exact=True, needs=(opcode_has("mma_async"), lambda p: not opcode_has("commit_group")(p)),
                     contrast=without("wait_group"), contrast_present=("C7517",))),
    Entry("notes_fence_commits", "notes!=ptxas|fence-commits-uncommitted|wgmma.f32.f16",
          "seed 001 says a stage runs from fence to commit_group; ptxas closes W0's group at the second fence:"
          " after `fence W0 fence W1 commit wait 1` reading W0 is fine (no C7514), without that fence it serializes (C7514).",
          lambda: pipeline("fence w0 fence w1 commit wait1 use0"),
          ptxas_says(absent=("C7514",), needs=(opcode_has("mma_async"),), contrast=without("wgmma.fence", 1),
                     contrast_present=("C7514",))),
    Entry("notes_indirect_call_C7510", "notes!=ptxas|indirect-call:C7510-not-C7509|wgmma.f32.f16",
          "seed 001 says an opaque call (an operand naming a block with no instructions) in a stage serializes with"
          " C7509 (extern calls); ptxas prints C7510 (pipeline crossing a function call) for an indirect call.",
          lambda: pipeline("fence w0 commit icall wait0 use0"),
          ptxas_says(present=("C7510",), absent=("C7509",), needs=(opcode_has("call"), opcode_has("mma_async")))),
    Entry("notes_direct_call_no_serialization", "notes!=ptxas|direct-call-not-serialized|wgmma.f32.f16",
          "seed 001 says a call (Ori opcode 236) inside a stage sets the first error and serializes the pipeline"
          " (C7509/C7510); ptxas only injects an arrive (C7519) for a direct call between wgmma and commit.",
          lambda: pipeline("fence w0 call commit wait0 use0"),
          ptxas_says(present=("C7519",), absent=("C7509", "C7510"), needs=(opcode_has("call"), opcode_has("mma_async")),
                     contrast=without("call"), contrast_absent=("C7519",))),
    Entry("notes_lone_commit_injects", "notes!=ptxas|C7517-C7519-without-wgmma|wgmma.commit_group",
          "seed 001 says C7517/C7519 mark a wait/arrive injected for registers a wgmma defines or uses;"
          " ptxas prints both for a lone wgmma.commit_group in a kernel with no wgmma.mma_async at all.",
          lambda: pipeline("commit"),
          ptxas_says(present=("C7517", "C7519"), needs=(lambda p: not opcode_has("mma_async")(p),))),
    Entry("hw_fp8_f32_accumulator_e8m13", "reference!=hardware|mismatch|wgmma.f32.e4m3",
          "the PTX ISA promises 'at least single precision' accumulation for wgmma with .f32 D; the H100 keeps 13"
          " fraction bits for fp8 inputs, so even C plus zero products loses C's low bits (docs/numerics.md c_lowbits_j14).",
          fp8_program, spec_vs_hardware_model(e8m13_hardware), judges=("ptxas", "checker", "reference", "hardware"),
          hardware=e8m13_hardware, output="wgmma.mma_async", defined=False, budget_s=120.0),
    Entry("hw_wmma_shared_misaligned", "hardware:fault:misaligned address|wmma.mma.s32.s8",
          "seed 002 asks wmma rows to be aligned to the fragment size (8 bytes here); on the H100 wmma.load from"
          " .shared rows aligned to 8 but not 16 bytes traps 'misaligned address' (tests/hw_records/warp_forms.json).",
          wmma_probe, spec_legal_hardware_faults(shared_rows_16_bytes), judges=("ptxas", "checker", "reference", "hardware"),
          hardware=shared_rows_16_bytes, output="wmma.load", defined=False, budget_s=240.0),
)


# ------------------------------------------------------------------ build, shrink, finalize


def entry_for(signature: str) -> Entry | None:
    """The corpus entry whose signature this is (or starts with), if any."""
    return next((e for e in ENTRIES if e.signature == signature), None) or next(
        (e for e in ENTRIES if signature and e.signature.startswith(signature) and "|" in signature), None)


def _defined(p: Program) -> bool:

    try:
        return run_program(p).undefined is None
    except Exception:
        return False


def guarded(e: Entry, original: Program) -> Holds:
    """The entry's predicate, plus: stays defined for the reference (when the original is) and keeps an output."""
    inner = e.keep(original)
    need_defined = e.defined and _defined(original)

    def holds(ps: Sequence[Program]) -> list[bool]:
        out = []
        for p, ok in zip(ps, inner(ps)):
            if ok and e.output:
                ok = feeds_global_store(p, e.output)
            out.append(ok and (not need_defined or _defined(p)))
        return out

    return holds


def feeds_global_store(p: Program, prefix: str) -> bool:
    """Whether a value computed by an instruction whose opcode starts with ``prefix`` reaches a global
    store (registers exactly; memory coarsely: a store of a tainted value taints every later load)."""
    fn = p.module.function(p.launch.kernel)
    tainted: set[str] = set()
    memory = False
    for _ in range(3):  # loops: a few passes reach the fixed point for repro-sized programs
        for ins in fn.instructions():
            op = ins.opcode
            if op.startswith(("st.", "wmma.store", "stmatrix")):
                values = {r.name for o in ins.operands if not isinstance(o, Addr) for r in registers_in(o)}
                if values & tainted:
                    if op.startswith("st.global"):
                        return True
                    memory = True
                continue
            defs, uses = defs_uses(ins)
            loads = op.startswith(("ld.", "wmma.load", "ldmatrix")) and not op.startswith("ld.param")
            if op.startswith(prefix) or any(u.name in tainted for u in uses) or (memory and loads):
                tainted |= {d.name for d in defs}
    return False


def keep_predicate(signature: str, program: Program, toolchain=None) -> Holds:
    """The shrink predicate for ``--keep SIGNATURE`` on ``program``: a corpus signature keeps what its
    entry keeps (``guarded``), any other what ``fuzzptx.reduce.signature_predicate`` judges (with
    ``toolchain``, another ptxas release)."""
    entry = entry_for(signature)
    if entry is not None and toolchain is None:
        return guarded(entry, program)
    return signature_predicate(signature, toolchain)


def repro(signature: str, program: Program) -> Program:
    """The shrunk ``program`` as a repro file: a corpus entry's finalization, else EXPECT lines rejudged."""
    entry = entry_for(signature)
    return finalize(entry, program) if entry is not None else rejudged(program, signature)


def build_entry(e: Entry, *, budget_s: float | None = None, log: Callable[[str], None] | None = None) -> tuple[Program, int, int]:
    """(finalized program, instructions before, after) for one entry."""
    p0 = e.build()
    holds = guarded(e, p0)
    res = shrink(replace(p0, notes=()), holds, budget_s=budget_s or e.budget_s, log=log)
    p = replace(res.program, notes=(e.shows, f"shrunk by fuzzptx.corpus from {res.before} to {res.after} instructions"))
    final = finalize(e, p)
    return final, res.before, instruction_count(final)


def finalize(e: Entry, p: Program) -> Program:
    """``p`` with the entry's signature and EXPECT lines from its judges (hardware: the records' model)."""
    judges = e.judges
    hw = e.hardware(p) if e.hardware else None
    if e.hardware is not None:
        why = (e.hardware.__doc__ or "").split(":")[0].split(".")[0].strip().replace("\n", " ")
        note = f"hardware EXPECT from fuzzptx.corpus.{e.hardware.__name__} ({' '.join(why.split())}), not from a GPU run of this file"
        p = replace(p, notes=tuple(n for n in p.notes if n != note) + (note,))
    if "reference" in judges:
        v = differ.judge(p, ("reference",))
        if v.reference_error is not None:  # a repro the reference cannot run would make `replay` exit 2
            judges = tuple(j for j in judges if j != "reference")
    return differ.finalize_repro(p, judges, e.signature, hardware_result=hw)


def readme(rows: list[tuple[str, str, str, int]]) -> str:
    lines = ["# corpus: real disagreements, shrunk", "",
             "Generated by `python -m fuzzptx.triage.corpus --write corpus/` (fuzzptx/triage/corpus.py); do not edit by hand.",
             "Each file is a self-describing repro: `fuzzptx replay FILE` reruns every judge and checks the EXPECT lines;",
             "`tests/test_corpus.py` does so for every file (hardware EXPECT lines only with a GPU: they record the",
             "H100's verdict per the committed records' models, see the NOTE lines).", "",
             "| file | signature | instructions | what it shows |", "| --- | --- | --- | --- |"]
    for name, sig, shows, n in rows:
        lines.append(f"| `{name}.ptx` | `{sig}` | {n} | {shows} |")
    return "\n".join(lines) + "\n"


def write(out: Path, names: Sequence[str] = (), budget_s: float | None = None) -> int:
    import time

    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for e in ENTRIES:
        path = out / f"{e.name}.ptx"
        if names and e.name not in names:
            if path.exists():
                rows.append((e.name, e.signature, e.shows, _count(path)))
            continue
        t0 = time.perf_counter()
        prog, before, after = build_entry(e, budget_s=budget_s)
        path.write_text(prog.to_ptx())
        rows.append((e.name, e.signature, e.shows, after))
        print(f"{path}: {before} -> {after} instructions in {time.perf_counter() - t0:.1f} s")
    (out / "README.md").write_text(readme(rows))
    return 0


def _count(path: Path) -> int:
    return instruction_count(Program.from_file(path))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzzptx.triage.corpus", description=__doc__.split("\n")[0])
    ap.add_argument("--write", metavar="DIR", help="build, shrink and write every entry and DIR/README.md")
    ap.add_argument("--only", nargs="*", default=(), help="entry names to rebuild (others are kept)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--budget", type=float, default=None, help="shrink budget per entry, seconds (default: the entry's)")
    args = ap.parse_args(argv)
    if args.list or not args.write:
        for e in ENTRIES:
            print(f"{e.name}: {e.signature}")
        return 0
    return write(Path(args.write), args.only, args.budget)


if __name__ == "__main__":
    sys.exit(main())
