"""Parser speed: ms per parse and per 100 instructions, on fuzz-generated programs and nvcc output.

Figures are CPU time of this process (``time.process_time``), best of ``--repeat`` rounds:
the CPU machines are shared, and CPU time of the best round is the figure least moved by
other sessions' load (wall time under load 6+ on 2 cores is 2-4x higher).  Usage: ``python benchmarks/bench_parse.py [--programs 40]``.
"""
from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

from fuzzptx.ptx.emit import emit
from fuzzptx.ptx.parse import _tokenize, parse

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def best_seconds(fn, arg, repeat: int, number: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        for _ in range(number):
            fn(arg)
        best = min(best, (time.process_time() - t0) / number)
    return best


def fuzz_texts(n: int) -> list[str]:
    """Emitted modules from the framework's own program strategy (the fuzz hot path)."""
    warnings.filterwarnings("ignore")
    from hypothesis import HealthCheck, given, settings

    from fuzzptx.strategies.programs import programs

    out: list[str] = []

    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(programs())
    def collect(p):
        out.append(emit(p.module))

    collect()
    return out


def report(name: str, texts: list[str], repeat: int) -> dict:
    total = tok = 0.0
    instrs = 0
    for t in texts:
        number = 20
        total += best_seconds(lambda s: parse(s), t, repeat, number)
        tok += best_seconds(lambda s: _tokenize(s, 0), t, repeat, number)
        instrs += sum(len(f.instructions()) for f in parse(t).functions())
    per100 = total / instrs * 100 * 1e3
    print(f"{name}: {len(texts)} modules, {instrs} instructions: {total / len(texts) * 1e3:.3f} ms/module, "
          f"{per100:.3f} ms per 100 instructions (tokenizer {tok / total:.0%})")
    return {"name": name, "modules": len(texts), "instructions": instrs, "ms_per_module": total / len(texts) * 1e3,
            "ms_per_100_instructions": per100, "tokenizer_share": tok / total}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rows = [
        report("fuzz programs (emit of strategies.programs)", fuzz_texts(args.programs), args.repeat),
        report("nvcc corpus (tests/data/*.ptx)", [p.read_text() for p in sorted(DATA.glob("*.ptx"))], args.repeat),
    ]
    out = Path(__file__).resolve().parent / "results" / "parse.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"load": os.getloadavg()[0], "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
