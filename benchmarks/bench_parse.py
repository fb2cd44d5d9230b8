"""Parser speed: ms per parse and per 100 instructions, on fuzz-generated programs and nvcc output.

Figures are the best of ``--repeat`` timing rounds (the CPU machines are shared, so the
minimum is the stable figure).  Usage: ``python benchmarks/bench_parse.py [--programs 40]``.
"""
from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

from fuzzptx.ptx.emit import emit
from fuzzptx.ptx.parse import _tokenize, parse

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def best_seconds(fn, arg, repeat: int, number: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn(arg)
        best = min(best, (time.perf_counter() - t0) / number)
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


def report(name: str, texts: list[str], repeat: int) -> None:
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    report("fuzz programs (emit of strategies.programs)", fuzz_texts(args.programs), args.repeat)
    report("nvcc corpus (tests/data/*.ptx)", [p.read_text() for p in sorted(DATA.glob("*.ptx"))], args.repeat)


if __name__ == "__main__":
    main()
