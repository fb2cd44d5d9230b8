"""The reference's scalar coverage table (oracles/reference/coverage.py) against the document, the
reference itself and ptxas: the table cannot claim a form the reference refuses, and the document
cannot go stale."""
from __future__ import annotations

import pathlib

import pytest

from fuzzptx.oracles.reference import Unsupported, run_program
from fuzzptx.oracles.reference.coverage import FORMS, REFUSED, chapters, render
from fuzzptx.program import Launch, Program
from fuzzptx.ptx.parse import parse
from support.hw_scalar import program

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "reference-coverage.md"


def test_the_coverage_document_is_the_table_rendered():
    assert DOC.read_text() == render() + "\n", "run: python -m fuzzptx.oracles.reference.coverage"


def test_form_labels_are_unique():
    labels = [f.label for f in FORMS]
    assert len(labels) == len(set(labels))


@pytest.mark.parametrize("chapter", chapters())
def test_every_form_of_the_table_runs_through_the_reference(chapter):
    """Each form on 64 threads of random data: no refusal, no error, and outputs defined wherever the
    form's inputs make them so (the UNDEF cases are the documented ones)."""
    for i, f in enumerate(FORMS):
        if f.chapter != chapter:
            continue
        p = program(f, seed=1000 + i, threads=64)
        try:
            r = run_program(p)
        except Unsupported as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(f"{f.label}: the table claims it, the reference refuses: {exc}")
        assert r.undefined is None, f"{f.label}: {r.undefined}"


def _refused_program(text: str) -> Program:
    src = f""".version 8.5
.target sm_90a
.address_size 64
.visible .entry k()
{{
.reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .pred %p<4>;
mov.u32 %r0, %tid.x; mov.u32 %r2, 0; mov.u32 %r3, 0; mov.u32 %r4, 0; mov.u64 %rd1, 0; mov.u64 %rd3, 0;
{text}
ret;
}}
"""
    return Program(parse(src, "refused.ptx"), Launch("k", (1, 1, 1), (32, 1, 1)), ())


@pytest.mark.parametrize("r", REFUSED, ids=[r.form for r in REFUSED])
def test_refused_forms_are_refused_in_one_line_with_their_reason(r):
    with pytest.raises(Unsupported) as e:
        run_program(_refused_program(r.text))
    msg = str(e.value)
    assert "\n" not in msg and r.reason in msg and "refused.ptx:" in msg


@pytest.mark.slow
def test_ptxas_accepts_every_form_of_the_table():
    from fuzzptx.oracles.ptxas import compile_parallel

    progs = [program(f, seed=i, threads=32, name=f"k{i}") for i, f in enumerate(FORMS)]
    res = compile_parallel([p.to_ptx() for p in progs], batch_size=64)
    rejected = [(FORMS[i].label, [str(d) for d in r.diagnostics][:1]) for i, r in enumerate(res) if not r.accepted]
    assert not rejected


RECORD = pathlib.Path(__file__).parent / "hw_records" / "scalar_ops_h100.json"
# the same script again on fresh random data after the reference's fixes (another master seed)
RERUN = pathlib.Path(__file__).parent / "hw_records" / "scalar_ops_h100_rerun.json"
# forms whose H100 bits may differ from the reference for a documented reason: form -> reason
# (the H100 record's examples; each reason names what the ISA says and what the H100 does)
_BF64 = ("the ISA's bfe/bfi take pos = b & 0xff and len = c & 0xff (\"restricted to the 8-bit value range "
         "0..255\"), which the H100 follows for .b32; for 64-bit forms (no 64-bit BFE in SASS, ptxas 13.0.88 "
         "emulates them) it uses the whole 32-bit b and c: every differing example has b or c >= 256")
_TF32 = ("cvt.rna{.satfinite}.tf32.f32 on a NaN: the H100 rounds the NaN's bits as an integer, so 0x7f800001 "
         "becomes +Inf (0x7f800000, and 0x7f7fe000 = MAX with .satfinite) and quiet NaNs lose mantissa bits "
         "(0x7fc00000 -> 0x7fbfe000 with .satfinite); a NaN input giving Inf or a finite value is outside the ISA")
_VIDEO = ("the ISA's video instructions compute a signed 34-bit tmp from 33-bit sign/zero-extended inputs, "
          "then optSaturate(tmp, sat, isSigned(dtype), dsel), then op2/merge with c of dtype's signedness; "
          "the H100 (ptxas 13.0.88's lowering) %s")
EXPLAINED: dict[str, str] = {
    "bfe.u64": _BF64, "bfe.s64": _BF64, "bfi.b64": _BF64,
    "cvt.rna.tf32.f32": _TF32, "cvt.rna.satfinite.tf32.f32": _TF32,
    "vadd.u32.u32.u32.sat": _VIDEO % "wraps u32 + u32 instead of clamping: 0xfffffffe + 0x57bc8976 gives 0x57bc8974",
    "vadd (.max)": _VIDEO % "returns neither max(tmp, c) nor one 32-bit signed or unsigned max: "
                           "vadd.u32.u32.u32.max(0x80000000, 0x80000001.b2, 0xff800000) gives 0x80000000",
    "vsub (.max)": _VIDEO % "returns neither max(tmp, c) nor one 32-bit signed or unsigned max: "
                           "vsub.u32.u32.u32.max(0x80, 0x7fffffff.b2, 0x7fff) gives 0xffffff81",
    "vsub (merge into .b1, .sat)": _VIDEO % "saturates a negative u32 tmp to 0xff, not 0, in the merged byte: "
                                            "0 - 0xac into .b1 gives 0xff",
}


@pytest.mark.parametrize("record", [RECORD, RERUN], ids=["first", "rerun"])
def test_the_h100_record_covers_every_form_with_no_unexplained_mismatch(record):
    import json

    if not record.exists():
        pytest.skip("no H100 record yet: tests/support/hw_scalar.py --out $OUT/scalar_ops_h100.json on the GPU machine")
    rec = json.loads(record.read_text())
    assert not rec["device"].get("dry_run") and rec["device"].get("device"), "the record ran on a GPU"
    run = {r["form"]: r for r in rec["rows"]}
    missing = sorted({f.label for f in FORMS} - set(run))
    assert not missing, f"forms added since the H100 run (rerun hw_scalar.py): {missing[:10]}"
    bad = [(name, r["status"], (r["runs"][0].get("examples") or [None])[0]) for name, r in run.items()
           if r["status"] != "ok" and name not in EXPLAINED and name in {f.label for f in FORMS}]
    assert not bad, bad[:5]
    stale = sorted(name for name in EXPLAINED if run.get(name, {}).get("status") == "ok")
    assert not stale, f"explained forms that agree with the H100 now (drop them): {stale}"
