"""Every compiler-made kernel of ``tests/data`` judged as a ``fuzzptx`` run judges it: the checker's
ISA and spec errors, then the SASS judge (which skips a program the checker calls illegal).  A
false error on real compiler output both misleads a user and hides the kernel from the SASS
rules, so the count that matters is both at zero (issue 40).

    PYTHONPATH=$PWD:tests .venv/bin/python -m support.compiler_kernels [--only SUBSTRING]

prints one line per kernel with findings or a skip, then the figure:
``N kernels: E isa/spec errors (in F files); SASS judged J, skipped S``.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
#: folders of compiler output (Triton, CUTLASS through nvcc, nvcc from the .cu files next to them)
FOLDERS = ("triton", "cutlass", "nvcc")
#: nvcc-made files at the top of tests/data (README.md there names each command)
TOP = ("wgmma_f16_regA.ptx", "wgmma_s8_desc_loop.ptx", "plain_loops_call.ptx", "plain_loops_call_lineinfo.ptx",
       "indirect_printf.ptx", "tiny_debug.ptx")


@dataclass(frozen=True)
class Judged:
    file: str
    errors: tuple[str, ...]  # "rule@line" of each isa/spec error
    sass: str  # "clean", "N hazard(s)", "skipped: why", or "no wgmma" (the SASS judge has nothing to do)


def files(only: str | None = None) -> list[Path]:
    out = [p for d in FOLDERS for p in sorted((DATA / d).glob("*.ptx"))] + [DATA / f for f in TOP]
    return [p for p in out if only is None or only in p.name]


def judge_all(paths: list[Path]) -> list[Judged]:
    """The checker's errors and the SASS judge's verdict per file; ptxas runs once for all."""
    from fuzzptx.judges import differ
    from fuzzptx.oracles.ptxas import compile_batch
    from fuzzptx.program import Program

    texts = [p.read_text() for p in paths]
    compiled = compile_batch(texts, want_cubin=True)
    out = []
    for path, text, r in zip(paths, texts, compiled):
        program = Program.from_ptx(text, str(path))
        v = differ.judge(program, ("checker", "ptxas", "sass"), text=text, judged=program, ptxas_result=r)
        errors = tuple(f"{f.rule}@{f.line}" for f in (v.checker or ()) if f.severity == "error"
                       and f.layer in ("isa", "spec"))
        has_wgmma = "wgmma.mma_async" in text
        if v.sass_skipped is not None:
            sass = f"skipped: {v.sass_skipped}"
        elif not has_wgmma:
            sass = "no wgmma"
        else:
            sass = "clean" if not v.sass else f"{len(v.sass)} hazard(s)"
        out.append(Judged(str(path.relative_to(DATA)), errors, sass))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m support.compiler_kernels", description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="judge only the files whose name contains this")
    a = ap.parse_args(argv)
    rows = judge_all(files(a.only))
    for row in rows:
        if row.errors or row.sass.startswith("skipped"):
            print(f"{row.file}: {len(row.errors)} error(s) {', '.join(row.errors[:4])}; sass {row.sass}")
    n_err = sum(len(r.errors) for r in rows)
    judged = sum(r.sass in ("clean",) or r.sass.endswith("hazard(s)") for r in rows)
    skipped = sum(r.sass.startswith("skipped") for r in rows)
    print(f"{len(rows)} kernels: {n_err} isa/spec errors (in {sum(bool(r.errors) for r in rows)} files); "
          f"SASS judged {judged}, skipped {skipped} ({sum(r.sass == 'no wgmma' for r in rows)} without wgmma)")
    return 0 if n_err == 0 and skipped == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
