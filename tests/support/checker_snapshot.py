"""The ptxas model's predictions and the checker's isa/spec findings, kept apart, on a fixed set of
programs: a change to a checker rule must leave the model's verdicts as they were (the model
reads the uniformity analysis) and change findings only where it means to.

    PYTHONPATH=$PWD:tests .venv/bin/python -m support.checker_snapshot save --out /tmp/before.pkl [--n 300]
    # ... change the checker ...
    PYTHONPATH=$PWD:tests .venv/bin/python -m support.checker_snapshot cmp --out /tmp/before.pkl [--n 300]

Programs: ``--n`` from ``draw_direct`` (seed 777, as ``benchmarks/judge_snapshot.py``), then every
``*.ptx`` under ``tests/data`` but the metamorphic pairs, then ``--extra`` folders.  ``cmp`` prints
how many programs' predictions and findings differ, each finding difference with its error
counts, and the error totals on the compiler-made kernels (``support.compiler_kernels``).
"""
from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"


def programs(n: int, extra: list[str]) -> list[tuple[str, str]]:
    from fuzzptx.engine.generate import draw_direct

    out = [(f"direct:{i}", p.to_ptx()) for i, p in enumerate(draw_direct(n, 777))]
    out += [(str(f.relative_to(DATA)), f.read_text()) for f in sorted(DATA.rglob("*.ptx")) if "metamorphic" not in f.parts]
    for d in extra:
        out += [(f"{Path(d).name}/{f.name}", f.read_text()) for f in sorted(Path(d).glob("*.ptx"))]
    return out


def snapshot(progs: list[tuple[str, str]]) -> dict:
    from fuzzptx.oracles.checker import check_and_predict
    from fuzzptx.ptx.parse import parse

    out = {}
    for key, text in progs:
        try:
            found, pred = check_and_predict(parse(text, key))
            out[key] = (repr(pred), sorted((f.rule, f.line or 0, f.severity) for f in found if f.layer in ("isa", "spec")))
        except Exception as exc:  # noqa: BLE001 - a program either side cannot judge is a difference too
            out[key] = (f"raised {type(exc).__name__}: {exc}"[:300], [])
    return out


def _errors(entry) -> int:
    return sum(1 for f in entry[1] if f[2] == "error")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m support.checker_snapshot", description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("save", "cmp"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--extra", action="append", default=[], help="another folder of .ptx files")
    a = ap.parse_args(argv)
    snap = snapshot(programs(a.n, a.extra))
    if a.mode == "save":
        Path(a.out).write_bytes(pickle.dumps(snap))
        print(f"{len(snap)} programs saved")
        return 0
    old = pickle.loads(Path(a.out).read_bytes())
    keys = sorted(set(old) & set(snap))
    preds = [k for k in keys if old[k][0] != snap[k][0]]
    finds = [k for k in keys if old[k][1] != snap[k][1]]
    print(f"{len(keys)} programs in both: model predictions differ on {len(preds)}, isa/spec findings on {len(finds)}")
    for k in preds[:20]:
        print(f"  prediction: {k}")
    for k in finds:
        print(f"  findings: {k}: {_errors(old[k])} -> {_errors(snap[k])} errors")
    from support.compiler_kernels import FOLDERS, TOP

    made = [k for k in keys if k.split("/")[0] in FOLDERS or k in TOP or k.split("/")[0] in {Path(d).name for d in a.extra}]
    print(f"compiler-made kernels ({len(made)}): {sum(_errors(old[k]) for k in made)} -> "
          f"{sum(_errors(snap[k]) for k in made)} isa/spec errors")
    return 1 if preds else 0


if __name__ == "__main__":
    sys.exit(main())
