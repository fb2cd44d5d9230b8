"""Which D registers of a wgmma are ever read (``oracles.reference.observed``), and that a
product computed for those columns only gives the program's results bit for bit."""
from __future__ import annotations

import importlib
import pickle

import pytest

from fuzzptx import isa
from fuzzptx.kernels import minimal_kernel
from fuzzptx.oracles.reference import observed, run_program
from fuzzptx.oracles.reference import layouts as L
from fuzzptx.oracles.reference.interp import func_info
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.emit import emit
from fuzzptx.ptx.parse import parse

instructions = importlib.import_module("fuzzptx.strategies.instructions")

DENSE = "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16|a=desc"
SPARSE = "wgmma.mma_async.sp.sync.aligned.m64n32k32.f32.bf16.bf16|a=reg"


def _form(prefix: str):
    opcode, _, a = prefix.partition("|")
    for f in isa.forms():
        if f.opcode == opcode and f.key.endswith(a):
            return f
    pytest.skip(f"no form {prefix} in the catalogue")


def _program(text: str) -> Program:
    return Program(parse(text, "obs.ptx"), Launch("k", (1, 1, 1), (128, 1, 1)),
                   (Buffer("out", "b32", 16384, "random", 3, output=True),))


def _sweep(*keys: str) -> str:
    return emit(instructions.merge_kernels([minimal_kernel(_form(k)) for k in keys]))


def _wgmmas(p: Program):
    info = func_info(p.module.kernels()[0])
    return info, [i for b in info.blocks for i in b.instrs if i.base == "wgmma" and "mma_async" in i.modifiers]


def test_a_sweep_reads_only_the_stored_register():
    p = _program(_sweep(DENSE, SPARSE))
    info, (w1, w2) = _wgmmas(p)
    for w in (w1, w2):
        d = [r.name for r in w.operands[0].items]
        assert observed.observed_d(info, w) == frozenset({d[0]})
        form = isa.form_for(w)
        cols = observed.columns(L.accumulator_layout(form.dtype, form.shape.n), d, frozenset({d[0]}))
        assert cols is not None and list(cols) == list(range(8))  # register 0 of every quad: 0, 2, 4, 6, padded


def _edit(text: str, after: str, insert: str) -> str:
    i = text.index(after) + len(after)
    return text[:i] + "\n\t" + insert + text[i:]


def test_what_counts_as_read():
    text = _sweep(DENSE)
    p = _program(text)
    _, (w,) = _wgmmas(p)
    d = [r.name for r in w.operands[0].items]
    # read after the wait, named between the wgmma and its wait, never named in a block with a successor
    reread = _edit(text, "wgmma.wait_group.sync.aligned 0;", f"add.f32 {d[0]}, {d[5]}, {d[6]};")
    info, (w,) = _wgmmas(_program(reread))
    assert observed.observed_d(info, w) == frozenset({d[0], d[5], d[6]})
    between = _edit(text, "wgmma.commit_group.sync.aligned;", f"mov.b32 {d[7]}, 0;")
    info, (w,) = _wgmmas(_program(between))
    assert d[7] in observed.observed_d(info, w)
    branch = _edit(text, "wgmma.wait_group.sync.aligned 0;", "bra.uni L_END;\nL_END:")
    info, (w,) = _wgmmas(_program(branch))
    assert observed.observed_d(info, w) == frozenset(d)
    # a wait 1 first: the results land by the wait 0, and nothing between names them
    later = text.replace("wgmma.wait_group.sync.aligned 0;", "wgmma.wait_group.sync.aligned 1;\n\twgmma.wait_group.sync.aligned 0;")
    info, (w,) = _wgmmas(_program(later))
    assert observed.observed_d(info, w) == frozenset({d[0]})
    # no wait 0 in the block (results may land anywhere later): no claim at all
    info, (w,) = _wgmmas(_program(text.replace("wgmma.wait_group.sync.aligned 0;", "wgmma.wait_group.sync.aligned 1;")))
    assert observed.observed_d(info, w) is None


@pytest.mark.parametrize("mode", ["spec", "hardware"])
def test_narrow_products_give_the_same_results(mode, monkeypatch):
    text = _sweep(DENSE, SPARSE, DENSE.replace("m64n64k16", "m64n256k16"))
    narrowed = []
    real = observed.columns

    def spy(*a):
        c = real(*a)
        narrowed.append(c is not None)
        return c

    monkeypatch.setattr(observed, "columns", spy)
    fast = pickle.dumps(run_program(_program(text), mode=mode).outputs["out"].__dict__)
    assert narrowed and all(narrowed)
    monkeypatch.setattr(observed, "observed_d", lambda info, ins: None)
    slow = pickle.dumps(run_program(_program(text), mode=mode).outputs["out"].__dict__)
    assert fast == slow
