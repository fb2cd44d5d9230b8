"""Every TMA / mbarrier / warp-specialisation form of issue 27 in one kernel
(tests/data/tma/forms.ptx): it round-trips, ptxas accepts the emitted text, and dataflow
reads the right registers as written and read."""
from __future__ import annotations

from pathlib import Path

from fuzzptx.oracles.ptxas import compile_ptx
from fuzzptx.ptx.dataflow import defs_uses
from fuzzptx.ptx.emit import emit
from fuzzptx.ptx.ir import Reg, Sym, TensorAddr, Vec
from fuzzptx.ptx.parse import parse, parse_file

FORMS = Path(__file__).resolve().parent / "data" / "tma" / "forms.ptx"


def _kernel():
    return parse_file(FORMS).kernels()[0]


def _names(regs):
    return [r.name for r in regs]


def test_the_forms_round_trip_and_ptxas_accepts_them():
    m = parse_file(FORMS)
    text = emit(m)
    assert parse(text) == m
    r = compile_ptx(text)
    assert r.accepted, r.stderr
    prefixes = ("cp.async.bulk.tensor.5d", "cp.async.bulk.tensor.3d.shared::cluster.global.im2col",
                "mbarrier.expect_tx", "fence.mbarrier_init", "setmaxnreg.dec", "griddepcontrol.wait",
                "prefetch.param.tensormap", "cp.async.bulk.wait_group.read", "cp.async.wait_all", "barrier.sync.aligned")
    ops = [i.opcode for i in m.kernels()[0].instructions()]
    assert all(any(o.startswith(p) for o in ops) for p in prefixes)


def test_tensor_operands_and_their_registers():
    ins = [i for i in _kernel().instructions() if i.opcode.startswith("cp.async.bulk.tensor.5d")][0]
    t = ins.operands[1]
    assert isinstance(t, TensorAddr) and t.base == Reg("%rd6") and len(t.coords) == 5
    assert str(t) == "[%rd6, {%r4, %r5, %r6, %r4, %r5}]"
    d, u = defs_uses(ins)
    assert d == () and _names(u) == ["%r1", "%rd6", "%r4", "%r5", "%r6", "%r2"]
    store = [i for i in _kernel().instructions() if i.opcode.startswith("cp.async.bulk.tensor.2d.global")][0]
    assert defs_uses(store)[0] == () and "%rd6" in _names(defs_uses(store)[1])
    im2col = [i for i in _kernel().instructions() if ".im2col" in i.opcode][0]
    assert im2col.operands[-1] == Vec((Reg("%rs1"),))


def test_mbarrier_results_elect_and_sink():
    by = {}
    for i in _kernel().instructions():
        by.setdefault(i.opcode, i)
    d, u = defs_uses(by["mbarrier.arrive.expect_tx.shared::cta.b64"])
    assert _names(d) == ["%rd3"] and _names(u) == ["%r2"]
    sink = by["mbarrier.arrive.expect_tx.release.cta.shared::cta.b64"]
    assert sink.operands[0] == Sym("_") and defs_uses(sink)[0] == ()
    d, u = defs_uses(by["mbarrier.try_wait.parity.acquire.cta.shared::cta.b64"])
    assert _names(d) == ["%p2"] and _names(u) == ["%r2", "%r7"]
    assert _names(defs_uses(by["elect.sync"])[0]) == ["%r3", "%p1"]
    assert defs_uses(by["mbarrier.init.shared::cta.b64"])[0] == ()
    assert defs_uses(by["setmaxnreg.inc.sync.aligned.u32"]) == ((), ())
