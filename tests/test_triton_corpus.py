"""The Triton-made sm_90a corpus (tests/data/triton, made by tests/support/triton_corpus.py):
every kernel parses, survives parse -> emit -> parse unchanged, the emitted text is accepted
by the real ptxas, and the checker's ISA and spec layers find no error on it (issue 27)."""
from __future__ import annotations

import json

import pytest

from fuzzptx.oracles.checker import check_module
from fuzzptx.ptx.ir import Sym, TensorAddr
from fuzzptx.ptx.parse import PtxSyntaxError, parse
from support.corpora import TRITON, assert_round_trips, parsed, triton_o3

CORPUS = TRITON
FILES = sorted(CORPUS.glob("*.ptx"))


def test_the_corpus_is_the_one_the_manifest_lists():
    listed = {k["file"] for k in json.loads((CORPUS / "MANIFEST.json").read_text())["kernels"]}
    assert {f.name for f in FILES} == listed
    assert len(FILES) >= 30
    kinds = {f.name.split("_")[0] + ("_tma" if "_tma" in f.name else "") + ("_ws" if "_ws" in f.name else "")
             for f in FILES}
    assert {"matmul", "matmul_tma", "matmul_tma_ws", "matmul_ws", "attn", "attn_tma"} <= kinds


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_kernel_parses_and_round_trips(path):
    assert_round_trips(path)


def test_tensor_operands_are_read_as_tensor_addresses():
    """Every cp.async.bulk.tensor of the corpus has one TensorAddr whose map is a register or a
    parameter symbol and whose coordinate count is the instruction's dimensionality."""
    seen = 0
    for path in FILES:
        for fn in parsed(path).kernels():
            for ins in fn.instructions():
                if not ins.opcode.startswith("cp.async.bulk.tensor"):
                    continue
                (t,) = [o for o in ins.operands if isinstance(o, TensorAddr)]
                dims = int(ins.modifiers[3][0])  # cp.async.bulk.tensor.Nd
                assert len(t.coords) == dims
                if isinstance(t.base, Sym):
                    assert t.base.name in {p.name for p in fn.params}
                seen += 1
    assert seen >= 100


def test_the_emitted_corpus_is_accepted_by_ptxas(tmp_path_factory):
    built = triton_o3(tmp_path_factory)  # compile_batch of the emitted texts, shared with test_sass_rules
    bad = [(f.name, built[f.name].stderr[:300]) for f in FILES if not built[f.name].accepted]
    assert bad == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_the_checker_finds_no_error_on_the_corpus(path):
    findings = check_module(parsed(path), layers=("isa", "spec"))
    errors = [f"{f.rule}: {f.message}" for f in findings if f.severity == "error"]
    assert errors == []


@pytest.mark.parametrize("text, where", [
    ("cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [%r1], [%rd1, %r2], [%r3];", "only '[tmap, {coords}]'"),
    ("cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [%r1], [%rd1+8, {%r2}], [%r3];", "without an offset"),
    ("cp.async.bulk.tensor.1d.shared::cta.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {}], [%r3];", "at least one coordinate"),
])
def test_a_malformed_tensor_operand_is_one_line(text, where):
    src = f".version 8.4\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{{\n{text}\n}}\n"
    with pytest.raises(PtxSyntaxError) as e:
        parse(src, "bad.ptx")
    msg = str(e.value)
    assert msg.startswith("bad.ptx:6:") and where in msg and "\n" not in msg
