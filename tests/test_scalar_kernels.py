"""Random integer kernels (strategies.scalar_kernels): defined by construction, accepted by ptxas,
run by the reference; the known bugs' shapes turned down on request; drawn into campaign blocks."""
import numpy as np

from fuzzptx.engine.generate import draw_direct
from fuzzptx.strategies.scalar_shapes import SHAPES
from fuzzptx.oracles.ptxas import compile_batch
from fuzzptx.oracles.reference import run_program
from fuzzptx.oracles.reference.values import UNDEF
from fuzzptx.program import Program
from fuzzptx.strategies.scalar_kernels import SCALAR_AVOIDABLE, is_scalar_kernel, kernel

SEEDS = range(500, 524)


def test_kernels_are_accepted_and_fully_defined():
    texts = [kernel(s, mix="v2") for s in SEEDS]
    assert all(r.accepted for r in compile_batch(texts))
    for s, t in list(zip(SEEDS, texts))[:8]:
        ref = run_program(Program.from_ptx(t, f"k{s}.ptx"), mode="spec")
        assert not any((np.asarray(o.kind) == UNDEF).any() for o in ref.outputs.values()), s


def test_avoid_turns_every_known_shape_down():
    def holding(avoid):
        progs = [Program.from_ptx(kernel(s, mix="v3", avoid=avoid), "k.ptx") for s in range(300)]
        return {name: sum(holds(p) for p in progs) for name, holds in SHAPES}

    drawn = holding(frozenset())
    assert all(drawn[name] > 0 for name in ("bfi-length-beyond-31", "bfe-s32-position-beyond-31",
                                            "abs-assumed-nonnegative", "lop3-repeated-operand",
                                            "neg-into-saturating-cvt"))
    assert holding(frozenset(SCALAR_AVOIDABLE)) == {name: 0 for name, _ in SHAPES}
    # the abs shape is rare (1 in 1,500): the probe's kernel that found it, with and without avoidance
    abs_shape = dict(SHAPES)["abs-into-saturating-cvt"]
    assert abs_shape(Program.from_ptx(kernel(100996, mix="v2"), "k.ptx"))
    assert not abs_shape(Program.from_ptx(kernel(100996, mix="v2", avoid=frozenset(SCALAR_AVOIDABLE)), "k.ptx"))


def test_v1_kernels_are_the_probe_suites():
    # tests/data/pairs and the H100 records name v1 seeds: the mix must keep drawing the same code
    text = kernel(1463)
    assert "bfe.s32" in text and "mix v" not in text


def test_a_block_starts_with_its_share_of_scalar_kernels():
    progs = draw_direct(16, 7, illegal_share=0.25, scalar_share=0.25)
    assert [is_scalar_kernel(p) for p in progs] == [True] * 4 + [False] * 12
    again = draw_direct(16, 7, illegal_share=0.25, scalar_share=0.25)
    assert [p.to_ptx() for p in progs] == [p.to_ptx() for p in again]
    assert not any(is_scalar_kernel(p) for p in draw_direct(16, 7, illegal_share=0.25))
