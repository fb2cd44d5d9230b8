"""Catch rates of the checker's spec rules on the mainloop and tensor-copy twins, and false alarms
on the legal programs and the real-kernel corpora (issue 27).

    PYTHONPATH=$PWD python3 tests/support/twin_rates.py [--twins N] [--legal N] [--corpus]

Prints one JSON object: per twin, how many of N drew a finding of the rule its fault breaks
(``caught``) and of any spec rule (``any``); per legal family, the programs with any spec finding
(a false alarm: they are legal) with the rules; per corpus directory, the files with spec findings.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from fuzzptx.oracles.checker import check_module
from fuzzptx.program import Program
from fuzzptx.ptx.parse import parse
from fuzzptx.strategies import mainloops, tensor_copies
from fuzzptx.strategies.direct import draw, reproducible
from fuzzptx.strategies.programs import wgmma_programs

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ("tests/data/triton", "tests/data/cutlass", "tests/data/nvcc")
#: the rule each twin breaks, as its label claims it
TENSOR_RULES = tensor_copies.TWIN_RULES
MAINLOOP_RULES = mainloops.TWIN_RULES


def spec_rules(p: Program) -> list[str]:
    return sorted({f.rule for f in check_module(p.module, layers=("spec",), tensormaps=p.tensormaps)})


def twins(n: int) -> dict:
    out = {}
    cases = [("mainloop", f, lambda f=f: st_one(mainloops.illegal_mainloop_programs((f,))), MAINLOOP_RULES[f])
             for f in mainloops.WGMMA_FAULTS]
    cases += [("tensor", f, lambda f=f: tensor_copies.illegal_tensor_copy_programs((f,)), TENSOR_RULES[f])
              for f in tensor_copies.FAULTS]
    for fam, fault, strat, rule in cases:
        s = strat()
        caught, anyf, missed = 0, 0, []
        for i in range(n):
            p = draw(s, f"twin:{fam}:{fault}:{i}")
            rules = spec_rules(p)
            caught += rule in rules
            anyf += bool(rules)
            if rule not in rules:
                missed.append(i)
        out[f"{fam}_{fault}"] = {"rule": rule, "n": n, "caught": caught, "any": anyf, "missed": missed[:10]}
    return out


def st_one(s):
    return s


def legal(n: int) -> dict:
    out = {}
    for name, s in (("mainloop_programs", mainloops.mainloop_programs()),
                    ("tensor_copy_programs", tensor_copies.tensor_copy_programs()),
                    ("wgmma_programs", wgmma_programs())):
        hits = Counter()
        bad = []
        for i in range(n):
            p = draw(s, f"legal:{name}:{i}")
            rules = spec_rules(p)
            if rules:
                bad.append(i)
                hits.update(rules)
        out[name] = {"n": n, "with_findings": len(bad), "rules": dict(hits), "indices": bad[:10]}
    return out


def corpora() -> dict:
    out = {}
    for d in CORPORA:
        files = sorted((ROOT / d).glob("*.ptx"))
        hits = {}
        for f in files:
            rules = sorted({x.rule for x in check_module(parse(f.read_text(), str(f)), layers=("spec",))})
            if rules:
                hits[f.name] = rules
        out[d] = {"files": len(files), "with_findings": len(hits), "hits": hits}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--twins", type=int, default=0)
    ap.add_argument("--legal", type=int, default=0)
    ap.add_argument("--corpus", action="store_true")
    a = ap.parse_args(argv)
    res = {}
    with reproducible():
        if a.twins:
            res["twins"] = twins(a.twins)
        if a.legal:
            res["legal"] = legal(a.legal)
    if a.corpus:
        res["corpora"] = corpora()
    json.dump(res, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
