"""Committed hardware records (tests/hw_records/*.json) stay well-formed and keep covering the catalogue.

A record is written on a GPU machine by ``benchmarks/hw_dense_wgmma.py``; CI has no GPU,
so these tests re-check what the record claims against the *current* catalogue: a form
added to the catalogue and never run on hardware fails here until the proof is rerun.
"""
from __future__ import annotations

import itertools
import json
import pathlib

import pytest

from fuzzptx import isa
from fuzzptx.builders import wgmma_variants

RECORDS = pathlib.Path(__file__).parent / "hw_records"
PROOF = RECORDS / "dense_wgmma.json"
KNOWN_EXPLANATIONS = {"fp8-f32-accumulator-e8m13"}
REQUIRED = {
    "record": str, "format": int, "date": str, "oracles": list, "inits": list, "dry_run": bool, "device": dict,
    "versions": dict, "command": str, "catalogue_dense_forms": int, "forms_run": list, "forms_missing": list,
    "cases_planned": int, "cases_run": int, "per_mix": dict, "layout_combinations_run": list,
    "mismatches": list, "numerics_findings": dict, "faults": list, "ptxas_rejected": list,
    "judge_errors": list, "timings": dict,
}


def _records():
    """This file checks the dense wgmma records (other families' records have their own tests)."""
    return sorted(RECORDS.glob("dense_wgmma*.json"))


def _mix(f) -> str:
    return f"{f.dtype}.{f.atype}.{f.btype}" + (".satfinite" if f.satfinite else "")


def test_the_proof_record_exists():
    assert PROOF.exists(), "run benchmarks/hw_dense_wgmma.py on an H100 and commit its record"


@pytest.mark.parametrize("path", _records(), ids=lambda p: p.name)
def test_record_format(path):
    rec = json.loads(path.read_text())
    for key, typ in REQUIRED.items():
        assert isinstance(rec.get(key), typ), f"{path.name}: {key} missing or not {typ.__name__}"
    assert rec["record"] == "dense_wgmma" and rec["format"] == 1
    assert rec["cases_run"] <= rec["cases_planned"]
    assert sum(m.get("run", 0) for m in rec["per_mix"].values()) == rec["cases_run"]
    for mm in rec["mismatches"]:
        assert {"oracle", "case"} <= set(mm) and "form" in mm["case"]
    for ex in rec["numerics_findings"]["examples"]:
        assert ex["explained_by"] in KNOWN_EXPLANATIONS


def test_proof_covers_every_dense_form_with_zero_mismatches():
    rec = json.loads(PROOF.read_text())
    assert "reference" in rec["oracles"], "the proof is judged by the reference interpreter"
    assert not rec["dry_run"] and rec["device"].get("device"), "the proof ran on a GPU"
    assert {"random", "small_int"} <= set(rec["inits"])
    for v in ("numpy", "ml_dtypes", "ptxas"):
        assert rec["versions"].get(v)
    dense = {f.key for f in isa.forms("wgmma")}
    missing = dense - set(rec["forms_run"])
    assert not missing, f"{len(missing)} dense forms never ran on hardware, e.g. {sorted(missing)[:3]}"
    assert rec["cases_run"] == rec["cases_planned"]
    spec_judges = [m for m in rec["mismatches"] if m["oracle"] in ("reference", "direct")]
    assert spec_judges == [], spec_judges[:3]
    assert rec["faults"] == [] and rec["ptxas_rejected"] == [] and rec["judge_errors"] == []
    assert set(rec["numerics_findings"]["by"]) <= KNOWN_EXPLANATIONS


def test_proof_covers_every_layout_combination_and_both_inits_per_mix():
    rec = json.loads(PROOF.read_text())
    ran = set(rec["layout_combinations_run"])
    groups: dict[str, list] = {}
    for f in isa.forms("wgmma"):
        groups.setdefault(_mix(f), []).append(f)
    for mix, forms in groups.items():
        stats = rec["per_mix"].get(mix)
        assert stats, f"type mix {mix} never ran"
        assert stats.get("init_random", 0) and stats.get("init_small_int", 0), mix
        for src in {f.a_source for f in forms}:
            v = wgmma_variants(next(f for f in forms if f.a_source == src))
            a_sw = v["a_swizzle"] if src == "desc" else ("reg",)
            a_mj = v["a_major"] if src == "desc" else ("reg",)
            for combo in itertools.product([src], a_sw, a_mj, v["b_swizzle"], v["b_major"]):
                assert "|".join(combo) + "|" + mix in ran, f"{mix}: layout {combo} never ran"


def _exploration(name: str) -> dict:
    path = RECORDS / name
    assert path.exists(), f"{name} is committed with the proof"
    return json.loads(path.read_text())


def test_base_offset_exploration_backs_the_reference_swizzle_model():
    """Patterns off their repeat boundary: the hardware matched layouts.py's phase = line - base_offset."""
    rec = _exploration("dense_wgmma_base_offset_explore.json")
    assert rec["explore"] == "base-offset" and not rec["dry_run"]
    agree = sum(m.get("reference_agree", 0) for m in rec["per_mix"].values())
    assert agree == rec["cases_run"] > 0
    # The alternative (phase from the absolute address, base offset ignored) was refuted somewhere.
    assert rec["mismatches"] and {m["oracle"] for m in rec["mismatches"]} == {"direct_absolute"}


def test_special_values_record_ran_clean_and_the_hardware_model_agrees():
    """NaN/Inf/subnormal inputs: no faults; the reference's hardware mode matched every output."""
    rec = _exploration("dense_wgmma_special.json")
    assert rec["inits"] == ["special"] and not rec["dry_run"]
    assert rec["faults"] == [] and rec["judge_errors"] == [] and rec["cases_run"] == rec["cases_planned"]
    if "reference_hw" in rec["oracles"]:
        assert [m for m in rec["mismatches"] if m["oracle"] == "reference_hw"] == []
    assert set(rec["numerics_findings"]["by"]) <= KNOWN_EXPLANATIONS
