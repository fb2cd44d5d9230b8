"""What a generator change does to fixed-seed draws: run it under two checkouts and compare.

    python tests/support/draw_snapshot.py --plans 150 --programs 120 --out after.json
    python tests/support/draw_snapshot.py --compare before.json after.json

Records, for fixed keys, each ``wgmma_plans`` draw with its ``surround.Around`` ops removed (the
pipeline and control a seed gives must not move when constructs are added after them), and for
``draw_direct(programs, 12345)`` (what ``fuzzptx run`` draws) each program's text hash, its notes
without the construct notes, and the mutation an illegal one carries.
"""
from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import replace


def _strip(script: tuple) -> tuple:
    from fuzzptx.strategies.control import Loop

    out = []
    for op in script:
        if type(op).__name__ == "Around":
            continue
        if isinstance(op, Loop):
            op = Loop(op.trips, _strip(op.body))
        out.append(op)
    return tuple(out)


def snapshot(plans: int, programs: int) -> dict:
    import fuzzptx.strategies as S
    from fuzzptx.engine.generate import draw_direct
    from fuzzptx.strategies.direct import draw, reproducible

    out: dict = {"plans": [], "programs": []}
    with reproducible():
        for i in range(plans):
            p = draw(S.wgmma_plans(), f"snap:{i}")
            out["plans"].append(repr(replace(p, script=_strip(p.script))))
    for p in draw_direct(programs, 12345):
        out["programs"].append({
            "sha": hashlib.sha1(p.to_ptx().encode()).hexdigest(),
            "notes": [n for n in p.notes if not n.startswith(("around", "approx"))][:3],
            "mutation": next((n for n in p.notes if n.startswith("mutation")), None)})
    return out


def compare(before: dict, after: dict) -> dict:
    n = len(before["programs"])
    legal = n - int(round(n * 0.25))  # draw_direct's mutants come last (ILLEGAL_SHARE)
    pb, pa = before["programs"], after["programs"]
    return {
        "plans_equal_without_constructs": f"{sum(x == y for x, y in zip(before['plans'], after['plans']))}/{len(before['plans'])}",
        "legal_texts_identical": f"{sum(x['sha'] == y['sha'] for x, y in zip(pb[:legal], pa[:legal]))}/{legal}",
        "legal_notes_identical": f"{sum(x['notes'] == y['notes'] for x, y in zip(pb[:legal], pa[:legal]))}/{legal}",
        "illegal_same_mutation": f"{sum(x['mutation'] == y['mutation'] for x, y in zip(pb[legal:], pa[legal:]))}/{n - legal}",
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--plans", type=int, default=150)
    ap.add_argument("--programs", type=int, default=120)
    ap.add_argument("--out")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        with open(args.compare[0]) as a, open(args.compare[1]) as b:
            print(json.dumps(compare(json.load(a), json.load(b)), indent=1))
        return 0
    if not args.out:
        ap.error("--out or --compare")
    with open(args.out, "w") as fh:
        json.dump(snapshot(args.plans, args.programs), fh)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
