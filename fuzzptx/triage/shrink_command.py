"""``fuzzptx shrink FILE --keep SIGNATURE -o OUT``: reduce a repro file while it keeps a signature.

Here, above both the reducer and the corpus, so that a corpus signature keeps what its entry keeps
(``fuzzptx.triage.corpus.keep_predicate``) while the reducer knows nothing of the corpus.  Writes
only ``-o/--output``."""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from fuzzptx.errors import FuzzptxError
from fuzzptx.program import Program, say_inferred
from fuzzptx.reduce import instruction_count, shrink
from fuzzptx.oracles import toolchains
from fuzzptx.triage.corpus import keep_predicate, repro


def main_shrink(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="fuzzptx shrink", description="Reduce a repro file while it keeps a signature.")
    ap.add_argument("file")
    ap.add_argument("--keep", required=True, help="ptxas:C7519, ptxas:error, checker!=ptxas, reference!=hardware, or a finding signature prefix")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds (default 60)")
    ap.add_argument("--ptxas", metavar="RELEASE", default=None,
                    help="shrink while the signature holds with this ptxas release as the ptxas (a release or a path; "
                         "fetched into the user cache on demand)")
    ap.add_argument("--kernel", metavar="NAME", default=None,
                    help="plain PTX with several kernels: the one the inferred header launches (default: the first)")
    args = ap.parse_args(argv)
    program = Program.from_file(args.file, args.kernel)
    say_inferred(program, args.file, "shrink")
    toolchain = None
    if args.ptxas:
        found = toolchains.resolve(args.ptxas)
        if len(found) != 1:
            raise FuzzptxError(f"--ptxas {args.ptxas}: name one release (got {len(found)})")
        toolchain = found[0]
    print(f"shrinking {args.file}: {instruction_count(program)} instructions, keep {args.keep}")
    try:
        res = shrink(program, keep_predicate(args.keep, program, toolchain), budget_s=args.budget, log=print)
    except FuzzptxError as exc:
        if exc.file is None:
            raise FuzzptxError(f"{args.keep}: {exc.message}", file=args.file) from None
        raise
    noted = replace(res.program, notes=res.program.notes + (f"shrunk from {res.before} to {res.after} instructions in {res.seconds:.1f} s",))
    out = repro(args.keep, noted)
    with open(args.output, "w") as fh:
        fh.write(out.to_ptx())
    print(f"done: {res.before} -> {res.after} instructions in {res.seconds:.1f} s ({res.evaluations} candidates); wrote {args.output}")
    for stat in res.passes:
        print(stat.line())
    return 0


if __name__ == "__main__":
    sys.exit(main_shrink(sys.argv[1:]))
