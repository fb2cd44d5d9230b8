"""The entries pass (Entries): the kernels other than the launched one go, all at once or by halves."""
from __future__ import annotations

from fuzzptx.program import Program
from fuzzptx.reduce.passes import PRE, Entries
from support.shrink_cases import HEADER, KERNEL, every, has_opcode, program, ptxas_accepts, reduced


def _module(extra: int) -> Program:
    """The launched kernel ``k`` and ``extra`` copies named ``k_1`` ...; ``k_2`` alone multiplies."""
    text = KERNEL.format(body="\tst.global.u32 [%g], %r0;", func="")
    entry = text[text.index(".visible .entry k("):]
    copies = [entry.replace(".entry k(", f".entry k_{i}(", 1) for i in range(1, extra + 1)]
    copies = [c.replace("\tret;", "\tmul.lo.u32 %r1, %r0, 3;\n\tst.global.u32 [%g], %r1;\n\tret;") if i == 2 else c
              for i, c in enumerate(copies, 1)]
    return Program.from_ptx(HEADER + text + "\n" + "\n".join(copies))


def _kernels(p: Program) -> list[str]:
    return [f.name for f in p.module.kernels()]


def test_the_other_kernels_go_while_ptxas_accepts():
    p = _module(5)
    out = reduced(Entries(), p, ptxas_accepts)
    assert _kernels(p) == ["k", "k_1", "k_2", "k_3", "k_4", "k_5"] and _kernels(out) == ["k"]


def test_a_kernel_the_predicate_needs_stays_and_halves_go_around_it():
    out = reduced(Entries(), _module(5), every(has_opcode("mul.lo")))
    assert _kernels(out) == ["k", "k_2"]


def test_one_kernel_or_no_launched_kernel_gives_no_candidate():
    assert Entries().candidates(program("\tst.global.u32 [%g], %r0;")) == []


def test_the_driver_runs_it_before_any_deletion():
    assert isinstance(PRE[0], Entries)
