"""How well the PTX-level reducer shrinks: planted bugs and padded real repros.

(a) planted bugs: a defect planted in a copy of a judge (the plants of
    tests/test_strategies_planted.py: the reference's swizzle XOR one address bit off,
    the wgmma accumulator rows g / g+8 swapped past column 128, the checker's fence rule
    satisfied by a fence on *some* path); programs drawn with ``fuzz.draw_programs`` until
    the planted judge disagrees with the original; then ``shrink.shrink`` with a predicate
    comparing the two.  The reference plants count only elements both runs define (an UNDEF
    element is free: a comparison with hardware skips it) and need ptxas to accept the program
    (as a reference!=hardware finding does); the checker plant compares fence findings.
(b) padded real repros: every corpus/*.ptx padded with unrelated code (a counting loop
    storing to a .shared pad, a dead arithmetic chain, a called .func with a body, an
    extra wgmma stage where the repro has wgmma) and shrunk back with its signature's
    predicate (``shrink.signature_predicate``, which knows the corpus signatures).

(c) real findings: programs drawn by ``fuzz.draw_programs`` and judged by the CPU
    judges (reference, checker, ptxas); one program per distinct finding signature is
    shrunk with ``--keep`` that signature.

Per case: instructions before/after, seconds, candidates judged.

    python benchmarks/bench_shrink.py [--out benchmarks/results/shrink.json] [--only planted|padded|found]
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


sys.path.insert(0, str(ROOT / "tests"))  # test-only tooling: tests/support
from support.planted import fence_any_path, fragment_rows_swapped, swizzle_off_by_one  # noqa: E402


def reference_outputs(program) -> tuple | None:
    from fuzzptx.oracles.reference import run_program

    try:
        ref = run_program(program)
    except Exception:
        return None
    if ref.undefined:
        return None
    return tuple(sorted(ref.outputs.items()))


def defined_differ(a: tuple, b: tuple) -> bool:
    """Whether two reference verdicts differ on an element both define: EXACT bits, or SET bounds.
    UNDEF elements are free (a judge comparing with hardware skips them), so a difference
    there shows nothing."""
    from fuzzptx.oracles.reference.values import EXACT, SET, UNDEF

    for (ka, oa), (kb, ob) in zip(a, b):
        if ka != kb or oa.count != ob.count:
            return True
        both = (oa.kind != UNDEF) & (ob.kind != UNDEF)
        if (oa.kind[both] != ob.kind[both]).any():
            return True
        eb = len(oa.data) // max(oa.count, 1)
        exact = both & (oa.kind == EXACT)
        da = np.frombuffer(oa.data, np.uint8).reshape(oa.count, eb)[exact]
        if (da != np.frombuffer(ob.data, np.uint8).reshape(ob.count, eb)[exact]).any():
            return True
        s = both & (oa.kind == SET)
        for x, y in ((oa.lo, ob.lo), (oa.hi, ob.hi), (oa.flags, ob.flags)):
            if not np.array_equal(x[s], y[s], equal_nan=True):
                return True
    return False


def fence_findings(program) -> tuple | None:
    from fuzzptx.oracles.checker import check_module

    try:
        return tuple(sorted(f.line or 0 for f in check_module(program.module, layers=("spec",)) if f.rule == "spec.fence.missing"))
    except Exception:
        return None


def differs(plant, observe, changed=lambda a, b: a != b, accepted: bool = False):
    """A shrink predicate: the planted judge and the original say different things (both ran);
    with ``accepted``, ptxas must also accept the program (as a hardware comparison needs).
    Judges in order and stops at the first program that holds (the reducer takes that one)."""

    def holds(programs):
        out = [False] * len(programs)
        for i, p in enumerate(programs):
            a = observe(p)
            if a is None:
                continue
            with plant():
                b = observe(p)
            if b is None or not changed(a, b):
                continue
            if accepted:
                from fuzzptx.oracles.ptxas import compile_ptx

                if not compile_ptx(p.to_ptx()).accepted:
                    continue
            out[i] = True
            break
        return out

    return holds


PLANTS = {  # name: (plant, observe, how two observations differ, ptxas must accept)
    "swizzle-off-by-one-bit": (swizzle_off_by_one, reference_outputs, defined_differ, True),
    "fragment-rows-swapped": (fragment_rows_swapped, reference_outputs, defined_differ, True),
    "fence-rule-any-path": (fence_any_path, fence_findings, lambda a, b: a != b, False),
}


def plant_predicate(name: str):
    plant, observe, changed, accepted = PLANTS[name]
    return differs(plant, observe, changed, accepted)


def hunt(name: str, limit: int, seed: int):
    """The first drawn program (of ``limit``) on which the plant shows, and how many were drawn."""
    from fuzzptx.engine.run import draw_programs

    holds = plant_predicate(name)
    programs = draw_programs(limit, seed, 0.5 if name.startswith("fence") else 0.0)
    for i, p in enumerate(programs):
        if holds([p])[0]:
            return p, i + 1
    return None, len(programs)


def planted_cases(budget: float, limit: int) -> list[dict]:
    from fuzzptx.shrink import shrink

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
                     "opcodes": [i.opcode for i in res.program.module.function(res.program.launch.kernel).instructions()]})
        print(f"planted {name}: drawn {drawn}, {res.before} -> {res.after} instructions in {res.seconds:.1f} s "
              f"({res.evaluations} candidates)", flush=True)
    return rows


# ------------------------------------------------------------------ padding


PAD_DECLS = """
\t.reg .b32 %pad<12>;
\t.reg .pred %padp;
\t.shared .align 4 .b32 padsm[4];
"""
PAD_LOOP = """
\tmov.u32 %pad0, 0;
\tmov.u32 %pad1, 3;
PADLOOP:
\tadd.u32 %pad0, %pad0, 1;
\tmul.lo.u32 %pad1, %pad1, 7;
\txor.b32 %pad1, %pad1, %pad0;
\tsetp.lt.u32 %padp, %pad0, 4;
\t@%padp bra PADLOOP;
\tst.shared.u32 [padsm], %pad1;
"""
PAD_DEAD = "".join(f"\tadd.u32 %pad{2 + i % 8}, %pad{2 + (i + 3) % 8}, {i + 5};\n" for i in range(10))
PAD_CALL = "\tcall (%pad10), padf, (%pad1);\n\tst.shared.u32 [padsm+4], %pad10;\n"
PAD_FUNC = """
.func (.reg .b32 r) padf(.reg .b32 x)
{
\t.reg .b32 t<3>;
\tadd.u32 t0, x, 1;
\tmul.lo.u32 t1, t0, t0;
\tshl.b32 t2, t1, 2;
\tor.b32 r, t2, 1;
\tret;
}
"""
PAD_STAGE = """
\t.reg .f32 %padf<4>;
\t.reg .b64 %paddesc;
\tmov.b64 %paddesc, 0;
\tmov.f32 %padf0, 0f00000000;
\tmov.f32 %padf1, 0f00000000;
\tmov.f32 %padf2, 0f00000000;
\tmov.f32 %padf3, 0f00000000;
\twgmma.fence.sync.aligned;
\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%padf0, %padf1, %padf2, %padf3}, %paddesc, %paddesc, 0, 1, 1, 0, 0;
\twgmma.commit_group.sync.aligned;
\twgmma.wait_group.sync.aligned 0;
\tst.shared.f32 [padsm+8], %padf0;
"""


def pad(text: str, parts: tuple[str, ...]) -> str:
    """The repro text with padding inserted at the top of the kernel body (and a .func before it)."""
    head, sep, body = text.partition("\n{\n")
    kernel_at = head.rfind(".visible .entry")
    if "call" in parts:
        head = head[:kernel_at] + PAD_FUNC.lstrip() + "\n" + head[kernel_at:]
    lines = body.split("\n")
    k = 0
    while k < len(lines) and lines[k].strip().startswith((".reg", ".shared", ".local")):
        k += 1
    decls = PAD_DECLS.strip("\n")
    code = ""
    if "stage" in parts:
        stage = PAD_STAGE.strip("\n").split("\n")
        decls += "\n" + "\n".join(stage[:2])
        code += "\n".join(stage[2:]) + "\n"
    if "loop" in parts:
        code += PAD_LOOP.strip("\n") + "\n"
    if "dead" in parts:
        code += PAD_DEAD
    if "call" in parts:
        code += PAD_CALL
    new_body = lines[:k] + decls.split("\n") + code.rstrip("\n").split("\n") + lines[k:]
    return head + sep + "\n".join(new_body)


def padded_cases(budget: float) -> list[dict]:
    from fuzzptx.program import Program
    from fuzzptx.shrink import instruction_count, shrink, signature_predicate

    rows = []
    for path in sorted((ROOT / "corpus").glob("*.ptx")):
        base = Program.from_file(path)
        holds = signature_predicate(base.signature, base)
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
                     "still_holds": holds([res.program])[0]})
        print(f"padded {path.stem} (+{','.join(parts)}): {res.before} -> {res.after} instructions "
              f"(corpus {instruction_count(base)}) in {res.seconds:.1f} s ({res.evaluations} candidates)", flush=True)
    return rows


def found_cases(budget: float, draw: int, limit: int, seed: int = 7) -> list[dict]:
    """(c) real findings: programs drawn by ``fuzz.draw_programs`` and judged by the CPU judges; the first
    program of each distinct signature is shrunk with ``--keep`` that signature."""
    from fuzzptx.judges import differ
    from fuzzptx.engine.run import draw_programs, judge_batch
    from fuzzptx.shrink import shrink, signature_predicate

    programs = draw_programs(draw, seed)
    seen: dict[str, object] = {}
    for lo in range(0, len(programs), 32):
        batch = programs[lo:lo + 32]
        for p, v in zip(batch, judge_batch(batch, differ.CPU_JUDGES)):
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
                     "still_holds": holds([res.program])[0]})
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
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/shrink.json"))
    ap.add_argument("--only", choices=("planted", "padded", "found"))
    ap.add_argument("--found-draw", type=int, default=128, help="programs drawn and judged for (c)")
    ap.add_argument("--found-limit", type=int, default=8, help="distinct finding signatures shrunk in (c)")
    ap.add_argument("--budget", type=float, default=60.0, help="shrink budget per case, seconds")
    ap.add_argument("--draw", type=int, default=200, help="programs drawn per plant at most")
    args = ap.parse_args(argv)
    from fuzzptx.oracles.ptxas import ptxas_version

    t0 = time.perf_counter()
    planted = [] if args.only in ("padded", "found") else planted_cases(args.budget, args.draw)
    padded = [] if args.only in ("planted", "found") else padded_cases(args.budget)
    found = [] if args.only in ("planted", "padded") else found_cases(args.budget, args.found_draw, args.found_limit)
    result = {
        "what": "PTX-level reducer (fuzzptx.shrink) on planted bugs and padded corpus repros",
        "command": "python benchmarks/bench_shrink.py" + (f" --only {args.only}" if args.only else ""),
        "ptxas": ptxas_version(), "python": platform.python_version(), "cpus": __import__("os").cpu_count(),
        "budget_s": args.budget, "seconds": round(time.perf_counter() - t0, 1),
        "planted": {"summary": summary(planted), "cases": planted},
        "padded": {"summary": summary(padded), "cases": padded},
        "found": {"summary": summary(found), "cases": found},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k]["summary"] for k in ("planted", "padded", "found")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
