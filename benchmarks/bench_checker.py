"""How fast the static checker is next to ptxas, per program.

Programs: N generated wgmma pipeline kernels (``tests/support/pipegen.py``, ~60 PTX
lines each, branches/loops/guards).  Measured: parse, ``check_module`` (all three layers),
``predict_ptxas`` alone, ``check_and_predict`` (both from one run of the model: what the differ
needs), and ptxas itself both as one process per program (first ``--solo`` programs) and batched
(``compile_batch``).  Target: checking costs under a tenth of ptxas.
Writes benchmarks/results/checker.json and prints a table.

    python benchmarks/bench_checker.py [--n 400] [--solo 32] [--seed 0]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import sys
import time

from fuzzptx.oracles.checker import check_and_predict, check_module, predict_ptxas
from fuzzptx.oracles.ptxas import compile_batch, compile_ptx
from fuzzptx.ptx.parse import parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))  # test-only tooling: tests/support
from support.pipegen import program, render  # noqa: E402

OUT = pathlib.Path(__file__).parent / "results" / "checker.json"


def _timed(fn, items):
    w0, c0 = time.perf_counter(), time.process_time()
    out = [fn(x) for x in items]
    return out, time.perf_counter() - w0, time.process_time() - c0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--solo", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    texts = [render(program(a.seed + i)) for i in range(a.n)]
    mods, parse_w, parse_c = _timed(parse, texts)
    _, check_w, check_c = _timed(check_module, mods)
    _, pred_w, pred_c = _timed(predict_ptxas, mods)
    _, both_w, both_c = _timed(check_and_predict, mods)
    _, solo_w, _ = _timed(lambda t: compile_ptx(t, want_cubin=False), texts[:a.solo])
    w0 = time.perf_counter()
    compile_batch(texts)
    batch_w = time.perf_counter() - w0
    per = lambda s, n: 1000 * s / n  # noqa: E731
    rows = {
        "parse (ms/program, cpu)": per(parse_c, a.n),
        "check_module, 3 layers (ms/program, cpu)": per(check_c, a.n),
        "check_module, 3 layers (ms/program, wall)": per(check_w, a.n),
        "predict_ptxas (ms/program, cpu)": per(pred_c, a.n),
        "check_and_predict (ms/program, cpu)": per(both_c, a.n),
        "check_module then predict_ptxas (ms/program, cpu)": per(check_c + pred_c, a.n),
        "parse + check (programs/s, cpu)": a.n / (parse_c + check_c),
        "ptxas, one process per program (ms/program, wall)": per(solo_w, a.solo),
        "ptxas, compile_batch (ms/program, wall)": per(batch_w, a.n),
    }
    solo = rows["ptxas, one process per program (ms/program, wall)"]
    mine = rows["parse (ms/program, cpu)"] + rows["check_module, 3 layers (ms/program, cpu)"]
    rows["(parse + check) / ptxas solo"] = mine / solo
    rows["(parse + check) / ptxas batched"] = mine / rows["ptxas, compile_batch (ms/program, wall)"]
    for k, v in rows.items():
        print(f"{k:55s} {v:10.3f}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"date": datetime.date.today().isoformat(), "n": a.n, "solo": a.solo,
                               "seed": a.seed, "load": os.getloadavg(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
