"""``fuzzptx run``'s command line: its options (the shared ones from ``fuzzptx.engine.options``),
the one ``RunConfig`` they make, the run (``fuzzptx.engine.run``), and the summary, with the
buckets a known-findings file names (``fuzzptx.triage.known``: the triage layer sits above the
engine, so the command that reads both sits above them)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from fuzzptx.engine import run as engine_run
from fuzzptx.engine.generate import ILLEGAL_SHARE
from fuzzptx.engine.options import (OptionError, Parser, add_examples, add_judges, add_json, add_numerics, add_out, add_ptxas,
                                    add_seed, add_workers, judges_of, non_negative_seconds, positive_int, share)
from fuzzptx.triage.known import classify, load_known


def build_parser() -> Parser:
    ap = Parser(prog="fuzzptx run", description="CPU fuzz run: draw programs, judge them, shrink each new finding "
                                                "into a repro, print a summary.")
    add_examples(ap, 200, "programs to judge")
    add_seed(ap)
    add_judges(ap, "run")
    add_ptxas(ap)
    ap.add_argument("--batch", type=positive_int, default=32, help="programs per ptxas module (a campaign block)")
    ap.add_argument("--illegal-share", type=share, default=ILLEGAL_SHARE, help="share of mutated (illegal) programs")
    add_out(ap, help="directory for results.jsonl, repros/ and summary.json (default: a new directory under "
                     "$FUZZPTX_OUT, else $XDG_DATA_HOME/fuzzptx/runs, else ~/.local/share/fuzzptx/runs)")
    ap.add_argument("--resume", action="store_true",
                    help="carry on from the record in --out: the programs judged there are not judged again "
                         "(the same --seed and --batch; the summary counts this run's programs)")
    ap.add_argument("--shrink-budget", type=non_negative_seconds, default=10.0,
                    help="seconds per new finding signature (0: no shrinking)")
    ap.add_argument("--shrink-model-gaps", action="store_true",
                    help="shrink findings that are gaps in our own models too (the checker's model of ptxas, "
                         "mutation labels, the reference): by default only compiler and hardware findings are shrunk")
    add_workers(ap, None, "CPU processes (0: judge in this process; default: one per core)")
    add_numerics(ap, "spec")
    ap.add_argument("--generator", choices=("direct", "hypothesis"), default="direct",
                    help="direct: each program drawn straight from the strategies, as the campaign does (fast); "
                         "hypothesis: through Hypothesis's engine")
    ap.add_argument("--known", metavar="FILE", help="known-findings file (e.g. reports/known_findings.txt): "
                    "the summary marks which buckets are known")
    add_json(ap, "print the summary as JSON")
    ap.add_argument("--quiet", action="store_true", help="no progress line")
    return ap


def main_run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.illegal_share > 1:
        raise OptionError(f"--illegal-share {args.illegal_share}: expected a share between 0 and 1")
    known = load_known(args.known) if args.known else ()  # before the run: a bad file costs nothing
    if args.resume and not args.out:
        raise OptionError("--resume: say which run to carry on with --out DIR")
    judges = judges_of(args, "run")
    out_dir = Path(args.out) if args.out else engine_run.default_out(args.seed)
    workers = (os.cpu_count() or 1) if args.workers is None else args.workers
    summ = engine_run.run(args.examples, args.seed, judges, out_dir, batch=args.batch,
                          illegal_share=args.illegal_share, shrink_budget=args.shrink_budget,
                          progress=not args.quiet and not args.json, numerics=args.numerics,
                          generator=args.generator, workers=workers, shrink_model_gaps=args.shrink_model_gaps,
                          resume=args.resume)
    if known:
        hit, _ = classify(summ["findings_by_bucket"], known, {"numerics": args.numerics})
        summ["known"] = {sig: k.where() for sig, k in hit.items()}
        summ["new_findings"] = sum(n for sig, n in summ["findings_by_bucket"].items() if sig not in hit)
    (out_dir / "summary.json").write_text(json.dumps(summ, indent=1))
    if args.json:
        print(json.dumps(summ, indent=1))
    else:
        print(engine_run.format_summary(summ, out_dir))
    return 1 if summ["block_errors_total"] else 0
