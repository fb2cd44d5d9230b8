"""A hardware mismatch is bucketed under the family of the unit whose output differed.

An H100 campaign put fp8 accumulator mismatches (unit 1 of a program, output ``d1``) into
``reference!=hardware|mismatch|wgmma.s32.s8`` because the program's first unit was s32: the
triager then looked for an integer bug that was not there."""
from __future__ import annotations


from fuzzptx.judges import differ
from fuzzptx.engine.generate import draw_direct
from fuzzptx.oracles.hardware import HwResult


def _two_unit_program():
    for p in draw_direct(120, 4):
        units = next((n for n in p.notes if n.startswith("units: ")), "")
        if differ.is_labelled(p) or units.count(", ") < 1 or any(n.startswith("approx") for n in p.notes):
            continue  # (an approximate op around the wgmmas: its values are bounds, not the bits compared here)
        fams = [differ.output_family(p, f"d{k}", "?") for k in range(2)]
        if fams[0] != fams[1] and "?" not in fams:
            return p, fams
    raise AssertionError("no two-unit program of two families among 120 draws")


def _garbage(data: bytes) -> bytes:
    """0x7f in every byte: NaN for f16, ~3.4e38 for f32, 2,139,062,143 for s32: no reference allows it."""
    return b"\x7f" * len(data)


def test_a_mismatch_in_the_second_units_output_names_that_units_family():
    p, fams = _two_unit_program()
    judged, text = differ.as_judged(p)
    v = differ.judge(judged, ("reference",), text=text, judged=judged)
    assert v.reference is not None and not v.reference.undefined
    outs = {name: v.reference.bytes(name) for name in v.reference.outputs}
    for k in (0, 1):
        observed = dict(outs, **{f"d{k}": _garbage(outs[f"d{k}"])})
        found = differ.compare(judged, v.replace(hardware=HwResult(observed)))
        sigs = [f.signature for f in found if f.signature.startswith("reference!=hardware")]
        assert sigs == [f"reference!=hardware|mismatch|{fams[k]}"], (k, sigs)
    # a buffer no unit owns keeps the program's family
    assert differ.output_family(p, "s", "wgmma.x") == "wgmma.x"
