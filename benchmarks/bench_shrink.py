"""How well the PTX-level reducer shrinks: planted bugs and padded real repros.

(a) planted bugs: a defect planted in a copy of a judge (the plants of
    tests/test_strategies_planted.py: the reference's swizzle XOR one address bit off,
    the wgmma accumulator rows g / g+8 swapped past column 128, the checker's fence rule
    satisfied by a fence on *some* path); programs drawn with ``fuzz.draw_programs`` until
    the planted judge disagrees with the original; then ``fuzzptx.reduce.shrink`` with a predicate
    comparing the two.  The reference plants count only elements both runs define (an UNDEF
    element is free: a comparison with hardware skips it) and need ptxas to accept the program
    (as a reference!=hardware finding does); the checker plant compares fence findings.
(b) padded real repros: every corpus/*.ptx padded with unrelated code (a counting loop
    storing to a .shared pad, a dead arithmetic chain, a called .func with a body, an
    extra wgmma stage where the repro has wgmma) and shrunk back with its signature's
    predicate (``fuzzptx.triage.corpus.keep_predicate``: a corpus signature keeps what its entry keeps).

(c) real findings: programs drawn by ``fuzz.draw_programs`` and judged by the CPU
    judges (reference, checker, ptxas); one program per distinct finding signature is
    shrunk with ``--keep`` that signature.

Per case: instructions before/after, seconds, candidates judged, and the shrunk kernel's instructions
(``instructions``, one PTX line each: what a reader checks the repro by).  The record keeps the load
averages before and after the run (a 2-core machine shared by several sessions: time is an upper bound).

    python benchmarks/bench_shrink.py [--out benchmarks/results/shrink.json] [--only planted|padded|found]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent


sys.path.insert(0, str(ROOT / "tests"))
from records import start  # noqa: E402  (benchmarks/records.py, beside this script)
from support.shrink_cases import PLANTS, pad, plant_predicate  # noqa: E402


def listing(program) -> list[str]:
    """The launched kernel's instructions as PTX lines."""
    from fuzzptx.ptx.emit import emit_instr

    return [emit_instr(i).strip() for i in program.module.function(program.launch.kernel).instructions()]


def hunt(name: str, limit: int, seed: int):
    """The first drawn program (of ``limit``) on which the plant shows, and how many were drawn."""
    from fuzzptx.engine.generate import draw_programs

    holds = plant_predicate(name)
    programs = draw_programs(limit, seed, 0.5 if name.startswith("fence") else 0.0)
    for i, p in enumerate(programs):
        if holds([p])[0]:
            return p, i + 1
    return None, len(programs)


def planted_cases(budget: float, limit: int) -> list[dict]:
    from fuzzptx.reduce import shrink

    rows = []
    for name in PLANTS:
        t0 = time.perf_counter()
        found, drawn = hunt(name, limit, seed=1)
        hunt_s = time.perf_counter() - t0
        if found is None:
            rows.append({"case": name, "kind": "planted", "found": False, "drawn": drawn, "hunt_seconds": round(hunt_s, 2)})
            continue
        res = shrink(found, plant_predicate(name), budget_s=budget)
        rows.append({"case": name, "kind": "planted", "found": True, "drawn": drawn, "hunt_seconds": round(hunt_s, 2),
                     "before": res.before, "after": res.after, "seconds": round(res.seconds, 2),
                     "candidates": res.evaluations, "still_holds": plant_predicate(name)([res.program])[0],
                     "instructions": listing(res.program)})
        print(f"planted {name}: drawn {drawn}, {res.before} -> {res.after} instructions in {res.seconds:.1f} s "
              f"({res.evaluations} candidates)", flush=True)
    return rows


# ------------------------------------------------------------------ padding


def padded_cases(budget: float) -> list[dict]:
    from fuzzptx.program import Program
    from fuzzptx.reduce import instruction_count, shrink
    from fuzzptx.triage.corpus import keep_predicate

    rows = []
    for path in sorted((ROOT / "corpus").glob("*.ptx")):
        base = Program.from_file(path)
        holds = keep_predicate(base.signature, base)
        chosen = None
        wg = any(i.opcode.startswith("wgmma") for f in base.module.functions() for i in f.instructions())
        for parts in (("stage", "loop", "dead", "call") if wg else ("loop", "dead", "call"),
                      ("loop", "dead", "call"), ("loop", "dead"), ("dead",)):
            try:
                p = Program.from_ptx(pad(path.read_text(), parts), str(path))
            except Exception:
                continue
            if holds([p])[0]:
                chosen = (parts, p)
                break
        if chosen is None:
            rows.append({"case": path.stem, "kind": "padded", "padding": None, "signature": base.signature})
            print(f"padded {path.stem}: no padding keeps the signature", flush=True)
            continue
        parts, p = chosen
        res = shrink(p, holds, budget_s=budget)
        rows.append({"case": path.stem, "kind": "padded", "signature": base.signature, "padding": list(parts),
                     "corpus_instructions": instruction_count(base), "before": res.before, "after": res.after,
                     "seconds": round(res.seconds, 2), "candidates": res.evaluations,
                     "still_holds": holds([res.program])[0], "instructions": listing(res.program)})
        print(f"padded {path.stem} (+{','.join(parts)}): {res.before} -> {res.after} instructions "
              f"(corpus {instruction_count(base)}) in {res.seconds:.1f} s ({res.evaluations} candidates)", flush=True)
    return rows


def found_cases(budget: float, draw: int, limit: int, seed: int = 7) -> list[dict]:
    """(c) real findings: blocks of programs drawn and judged by the CPU judges as a campaign does; the first
    program of each distinct signature is shrunk with ``--keep`` that signature."""
    from fuzzptx.engine.block import prepare_block
    from fuzzptx.engine.generate import BlockTask
    from fuzzptx.judges import differ
    from fuzzptx.engine.predicate import signature_predicate
    from fuzzptx.reduce import shrink

    seen: dict[str, object] = {}
    for block in range(-(-draw // 32)):  # the campaign's own CPU stages, block by block
        item = prepare_block(BlockTask(block=block, seed=seed, size=32, judges=differ.CPU_JUDGES))
        for j, v in enumerate(item.verdicts):
            p = item.program(j)
            for f in differ.compare(p, v):
                if f.signature not in seen and not f.signature.startswith(("expect!=",)):
                    seen[f.signature] = p
    rows = []
    for sig, p in list(seen.items())[:limit]:
        holds = signature_predicate(sig)
        if not holds([p])[0]:  # a finding that does not reproduce alone (e.g. a line-number artefact)
            rows.append({"case": sig, "kind": "found", "reproduces": False})
            continue
        res = shrink(p, holds, budget_s=budget)
        rows.append({"case": sig, "kind": "found", "before": res.before, "after": res.after,
                     "seconds": round(res.seconds, 2), "candidates": res.evaluations,
                     "still_holds": holds([res.program])[0], "instructions": listing(res.program)})
        print(f"found {sig}: {res.before} -> {res.after} instructions in {res.seconds:.1f} s "
              f"({res.evaluations} candidates)", flush=True)
    return rows


def summary(rows: list[dict]) -> dict:
    done = [r for r in rows if "after" in r]
    if not done:
        return {}
    return {
        "cases": len(rows), "shrunk": len(done),
        "median_after": statistics.median(r["after"] for r in done),
        "max_after": max(r["after"] for r in done),
        "median_seconds": round(statistics.median(r["seconds"] for r in done), 2),
        "max_seconds": max(r["seconds"] for r in done),
        "at_most_10_instructions_within_60_s": sum(r["after"] <= 10 and r["seconds"] <= 60 for r in done),
        "all_still_hold": all(r.get("still_holds") for r in done),
    }


def main(argv: list[str] | None = None) -> int:
    bench = start(None if argv is None else [__file__, *argv])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/shrink.json"))
    ap.add_argument("--only", choices=("planted", "padded", "found"))
    ap.add_argument("--found-draw", type=int, default=128, help="programs drawn and judged for (c)")
    ap.add_argument("--found-limit", type=int, default=8, help="distinct finding signatures shrunk in (c)")
    ap.add_argument("--budget", type=float, default=60.0, help="shrink budget per case, seconds")
    ap.add_argument("--draw", type=int, default=200, help="programs drawn per plant at most")
    args = ap.parse_args(argv)
    from fuzzptx.oracles.ptxas import ptxas_version

    load_before = os.getloadavg()
    t0 = time.perf_counter()
    planted = [] if args.only in ("padded", "found") else planted_cases(args.budget, args.draw)
    padded = [] if args.only in ("planted", "found") else padded_cases(args.budget)
    found = [] if args.only in ("planted", "padded") else found_cases(args.budget, args.found_draw, args.found_limit)
    result = {
        "what": "PTX-level reducer (fuzzptx.reduce) on planted bugs and padded corpus repros",
        "command": "python benchmarks/bench_shrink.py" + (f" --only {args.only}" if args.only else ""),
        "ptxas": ptxas_version(), "python": platform.python_version(), "cpus": os.cpu_count(),
        "load_avg_before": [round(x, 2) for x in load_before], "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "budget_s": args.budget, "seconds": round(time.perf_counter() - t0, 1),
        "planted": {"summary": summary(planted), "cases": planted},
        "padded": {"summary": summary(padded), "cases": padded},
        "found": {"summary": summary(found), "cases": found},
    }
    bench.finish(result, args.out, echo=False)
    print(json.dumps({k: result[k]["summary"] for k in ("planted", "padded", "found")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
