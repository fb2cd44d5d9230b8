"""SASS coverage as feedback (issue 38): each accepted program's SASS forms in its record, the run's
coverage map, the steering policies (``strategies.steer``) the engine feeds, the real kernels'
vocabulary cached in the user cache, and the report's SASS section."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzzptx.engine.generate import BlockTask, block_seed, draw_direct, recipes
from fuzzptx.engine.steering import SassCoverage, SteerFold
from fuzzptx.oracles import sass
from fuzzptx.oracles.sass import real as real_vocab
from fuzzptx.oracles.sass.listing import Instruction, Listing, SassFunction
from fuzzptx.oracles.sass.vocabulary import program_forms
from fuzzptx.strategies.steer import CoverageMap, Kept, Parent, Steering, draw_recipe

ROOT = Path(__file__).resolve().parents[1]
needs_disassembler = pytest.mark.skipif(sass.disassembler() is None, reason="no disassembler")


def _fn(name: str, *ops: str) -> SassFunction:
    return SassFunction(name, tuple(Instruction(16 * i, None, op, "", op, None) for i, op in enumerate(ops)), {}, {}, ())


def test_program_forms_reads_the_programs_own_functions_of_a_batched_cubin():
    listing = Listing({"k_fzb1_": _fn("k_fzb1_", "HGMMA.64x128x16.F32", "EXIT"),
                       "helper_fzb1_": _fn("helper_fzb1_", "FFMA.FTZ"),
                       "k_fzb11_": _fn("k_fzb11_", "IMAD.HI")})
    assert program_forms(listing, ["k_fzb1_"]) == {"HGMMA.F32", "EXIT", "FFMA.FTZ"}
    assert program_forms(listing, ["k_fzb11_"]) == {"IMAD.HI"}
    alone = Listing({"k": _fn("k", "MUFU.EX2"), "f": _fn("f", "RET.REL")})
    assert program_forms(alone, ["k"]) == {"MUFU.EX2", "RET.REL"}  # compiled alone: every function is its own


@needs_disassembler
def test_each_accepted_program_records_its_sass_forms_from_the_judges_listing(monkeypatch):
    """The forms come from the listing the SASS judge's block disassembly made (one run for the
    block), for every accepted program, wgmma or not; programs differ in what they reach."""
    from fuzzptx.engine import block
    from fuzzptx.oracles.sass import listing

    runs: list[int] = []
    real = listing.run_disassembler
    monkeypatch.setattr(listing, "run_disassembler", lambda data, tool: runs.append(1) or real(data, tool))
    listing._CACHE.clear()
    prep = block.pool_block(BlockTask(0, 31, 8, ("ptxas", "sass")))
    assert len(runs) == 1  # no second disassembler run for the forms
    fields = [v.record_fields() for v in prep.verdicts]
    accepted = [v.ptxas.accepted for v in prep.verdicts]
    assert all(("sass_forms" in f) == ok for f, ok in zip(fields, accepted))
    got = [frozenset(f["sass_forms"]) for f in fields if "sass_forms" in f]
    assert len(got) >= 4 and len(set(got)) >= 3 and all("EXIT" in g for g in got)
    # without the SASS judge no program carries forms
    plain = block.pool_block(BlockTask(0, 31, 8, ("ptxas",)))
    assert not any(v.record_fields() for v in plain.verdicts)


def test_coverage_map_and_policies():
    cov = CoverageMap().add({"A", "B"}, "0:0").add({"A"}, "0:1")
    assert cov.counts == {"A": 2, "B": 1} and cov.first == {"A": "0:0", "B": "0:0"} and cov.programs == 2
    assert cov.new({"A", "C"}) == {"C"} and cov.score({"C"}) == 1.0 and cov.score({"A"}) == pytest.approx(1 / 3)
    corpus = Kept("corpus").offer(cov, frozenset({"A"}), "k:1:0", True)
    assert corpus.parents[0].recipe == "k:1:0"  # A is rare (2 programs < RARE)
    common = CoverageMap({"A": 50}, {"A": "0:0"}, 50)
    assert Kept("corpus").offer(common, frozenset({"A"}), "k:1:1", True).parents == ()  # neither new nor rare
    target = Kept("target", tuple(Parent(f"k:0:{i}", True, float(i), 1) for i in range(48)))
    better = target.offer(common, frozenset({"X", "Y"}), "k:9:9", True)  # score 2.0 > the worst, 0.0
    assert "k:9:9" in [p.recipe for p in better.parents] and "k:0:0" not in [p.recipe for p in better.parents]
    assert better.offer(common, frozenset({"A"}), "k:9:8", True) is better  # 1/51: below every kept one


def test_a_steered_block_mutates_kept_programs_and_is_a_function_of_its_inputs():
    kept = Kept("corpus", tuple(Parent(f"k:5:{i}", i < 6, 1.0, 10) for i in range(8)))
    st = Steering(kept)
    made = recipes(16, 77, 0.25, st)
    mutants = [(i, r) for i, (r, _) in enumerate(made) if r.startswith("m")]
    assert len(mutants) >= 4
    progs = draw_direct(16, 77, 0.25, steering=st)
    assert [p.to_ptx() for p in progs] == [p.to_ptx() for p in draw_direct(16, 77, 0.25, steering=st)]
    fresh = draw_direct(16, 77, 0.25)
    assert all(progs[i].to_ptx() != fresh[i].to_ptx() for i, _ in mutants)
    assert all(progs[i].to_ptx() == fresh[i].to_ptx() for i, (r, _) in enumerate(made) if r.startswith("k:"))
    parents = draw_direct(8, 5)
    import fuzzptx.strategies as S
    from fuzzptx.strategies.direct import reproducible

    with reproducible():  # a recipe draws its program again, alone
        i, r = mutants[0]
        assert draw_recipe(S.programs() if made[i][1] else S.illegal_programs(), r).to_ptx() == progs[i].to_ptx()
    # a point mutation keeps most of its parent
    for i, r in mutants:
        if r.startswith("mpoint"):
            parent = parents[int(r.rsplit(":", 1)[1].rstrip(")"))]
            same = set(parent.to_ptx().splitlines()) & set(progs[i].to_ptx().splitlines())
            assert len(same) > 0.5 * len(parent.to_ptx().splitlines())


def test_the_fold_is_in_block_order_whatever_order_blocks_finish_in():
    def run(order):
        fold = SteerFold("corpus", lag=2)
        for b in range(6):
            fold.submitted(BlockTask(b, 3, 4, ("ptxas",), steering=fold.steering_for(b) or None))
        for b in order:
            fold.recorded(b, [(i, {f"F{b}{i}", "EXIT"}) for i in range(3)])
        return fold
    a, b = run([0, 1, 2, 3, 4, 5]), run([3, 1, 5, 0, 4, 2])
    assert a.folded == b.folded == 6 and a.kept == b.kept and a.cov.counts == b.cov.counts
    assert a.cov.first["F21"] == "2:1"
    fold = SteerFold("corpus", lag=2)
    assert fold.steering_for(2) is None  # nothing kept yet, and block 2 reads no block
    assert fold.steering_for(3) is False  # block 3 reads block 0, which is not in
    for b in range(2):
        fold.submitted(BlockTask(b, 3, 4, ("ptxas",)))
        fold.recorded(b, [(0, {"EXIT", f"FMUL{b}"})])
    assert [p.recipe for p in fold.steering_for(3).kept.parents] == ["k:%d:0" % block_seed(3, 0)]  # block 0 only
    assert len(fold.steering_for(4).kept.parents) == 2  # blocks 0 and 1, however many more are folded
    fold.skip_to(5)  # blocks never recorded count as folded (no wait for ever)
    assert fold.folded == 5


def test_sass_coverage_counts_and_first_programs():
    c = SassCoverage()
    c.add(["A", "B"], "0:0", 1, 0.5)
    c.add(None, "0:1", 2, 0.6)  # rejected or not disassembled: nothing
    c.add(["B", "C"], "0:2", 3, 0.7)
    s = c.stats()
    assert s["sass_forms_reached"] == 3 and s["sass_programs"] == 2
    assert s["sass_coverage"]["B"] == [2, "0:0"] and s["sass_coverage"]["C"] == [1, "0:2"]
    assert s["sass_timeline"] == [(0.5, 1, 2), (0.7, 3, 3)]


@needs_disassembler
def test_real_vocabulary_is_computed_once_into_the_user_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    files = [ROOT / "tests" / "data" / "nvcc" / "wgmma_register_a.ptx", ROOT / "tests" / "data" / "nvcc" / "mma_sync_ldmatrix_loop.ptx"]
    before = {p: p.stat().st_mtime for p in (ROOT / "tests" / "data").rglob("*")}
    assert real_vocab.real_vocabulary(files) is None  # not packaged, not cached: a run never computes it
    v = real_vocab.real_vocabulary(files, compute=True)
    assert v["accepted"] == 2 and "EXIT" in v["forms"] and any(f.startswith("HGMMA") for f in v["forms"])
    assert list((tmp_path / "cache" / "fuzzptx" / "sass_vocabulary").glob("*.json"))
    monkeypatch.setattr(real_vocab, "vocabulary", lambda *a, **k: pytest.fail("computed again"))
    assert real_vocab.real_vocabulary(files) == v == real_vocab.real_vocabulary(files, compute=True)
    assert {p: p.stat().st_mtime for p in (ROOT / "tests" / "data").rglob("*")} == before  # nothing in the checkout
    got = real_vocab.against_real(set(v["forms"]) - {"EXIT"}, v)
    assert got["missing"] == ["EXIT"] and got["reached"] == got["real_forms"] - 1


def test_summary_and_report_show_sass_coverage(tmp_path, monkeypatch):
    from fuzzptx.engine import run as engine_run
    from fuzzptx.triage import report

    real = {"forms": {"EXIT": 3, "FMUL": 2, "SHFL.BFLY": 1}, "kernels": 3, "accepted": 3}
    monkeypatch.setattr(report, "real_vocabulary", lambda: real)
    recs = [{"block": 0, "index": i, "id": f"0:{i}", "t": 100.0 + i, "family": "wgmma.f32.f16", "forms": [],
             "verdicts": {"ptxas": "accepted"}, "findings": [], "sass_forms": forms}
            for i, forms in enumerate([["EXIT", "HGMMA.F32"], ["EXIT", "FMUL"], ["EXIT"]])]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    summ = report.write_report(tmp_path)
    assert summ["sass_forms_reached"] == 3
    assert summ["sass_real_kernels"]["missing"] == ["SHFL.BFLY"] and summ["sass_real_kernels"]["reached"] == 2
    page = (tmp_path / "report.html").read_text()
    assert "SASS forms over time" in page and "<code>SHFL.BFLY</code>" in page
    line = engine_run.sass_line({"sass_forms_reached": 3, "sass_programs": 3,
                                 "sass_real_kernels": summ["sass_real_kernels"]})
    assert "3 SASS forms" in line and "2/3 (66.7%)" in line and "SHFL.BFLY" in line
    # a run with --ptxas RELEASES has only sass@ judges: no "0 SASS forms ... reached 0/222" line
    none = engine_run.sass_line({"sass_forms_reached": 0, "sass_programs": 0, "sass_real_kernels": summ["sass_real_kernels"]})
    assert none.startswith("not measured") and "0/" not in none


def _steered(out: Path, examples: int = 27, resume: bool = False) -> list[tuple]:
    from fuzzptx.engine.config import RunConfig
    from fuzzptx.engine.run import run_config

    s = run_config(RunConfig(seed=8, block_size=3, examples=examples, judges=("ptxas", "sass"), steer="corpus",
                             out=out, inline=True), progress=False, resume=resume)
    assert s["sass_forms_reached"] > 0 and s["sass_coverage"]
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return sorted(((r["id"], r.get("draw"), tuple(r.get("sass_forms", ()))) for r in recs))


@needs_disassembler
def test_a_steered_run_is_a_function_of_its_seed_and_resumes_the_same(tmp_path):
    """Inline, blocks of 3: block b is drawn from the corpus of the blocks before b - 4 (the lag:
    one task of four blocks in flight); a run stopped after five blocks and resumed records the
    same programs and forms as one that ran through (the judged blocks folded from the record)."""
    whole = _steered(tmp_path / "a")
    assert any(d is not None and d.startswith("m") for _, d, _ in whole)  # mutants of kept programs
    assert all(d is None for i, d, _ in whole if int(i.split(":")[0]) < 5)  # blocks 0-4 read no folded block
    _steered(tmp_path / "b", examples=15)
    assert _steered(tmp_path / "b", resume=True) == whole
