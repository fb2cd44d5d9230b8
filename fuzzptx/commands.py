"""``fuzzptx run`` and ``fuzzptx campaign``'s command lines: their options (the shared ones from
``fuzzptx.engine.options``), the one ``RunConfig`` they make, the engine's run, and the summary
with the known-bug ledger's verdict on each root cause (``fuzzptx.triage``: the triage layer sits
above the engine, so the commands that read both sit above them)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from fuzzptx.engine import run as engine_run
from fuzzptx.engine.generate import ILLEGAL_SHARE, SCALAR_SHARE
from fuzzptx.engine.options import (GENERATOR_HELP, GENERATORS, OptionError, Parser, add_examples, add_judges, add_json,
                                    add_kernels, add_numerics, add_out, add_pairs, add_ptxas, add_seed, add_steer,
                                    add_workers, judges_of, kernel_files, non_negative_seconds, positive_int, share)
from fuzzptx.engine.campaign import (CampaignError, _say, _write_json, build_parser as campaign_parser, corpus_files,
                                     gpu_judges_usable, parse_duration, parse_gpus, parse_shard, run_campaign,
                                     shard_from_env, usable_corpus)
from fuzzptx.engine.config import RunConfig
from fuzzptx.judges.base import DEVICE
from fuzzptx.oracles.sass.real import against_real, real_vocabulary
from fuzzptx.triage import bugs
from fuzzptx.triage.known import DEFAULT_LEDGER, avoided, default_numerics, ledger


def real_kernels_reached(summ: dict) -> dict | None:
    """Of the real kernels' SASS forms (``tests/data``, computed once per ptxas into the user
    cache: ``fuzzptx.oracles.sass.real``), those a run's programs reached; None without SASS coverage."""
    if not summ.get("sass_coverage"):
        return None
    return against_real(summ["sass_coverage"], real_vocabulary())


def build_parser() -> Parser:
    ap = Parser(prog="fuzzptx run", description="CPU fuzz run: draw programs, judge them, shrink each new finding "
                                                "into a repro, print a summary.")
    add_examples(ap, 200, "programs to judge")
    add_seed(ap)
    add_judges(ap, "run")
    add_ptxas(ap)
    add_pairs(ap, "run")
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
    ap.add_argument("--generator", choices=GENERATORS, default="direct", help=GENERATOR_HELP)
    add_kernels(ap)
    ap.add_argument("--known", metavar="FILE", default=None,
                    help="known-bug ledger (TOML) the run's root causes are matched to: the headline says how many "
                         f"distinct bugs are new; default: {DEFAULT_LEDGER.relative_to(DEFAULT_LEDGER.parents[1])} of "
                         "the checkout when there is one; 'none': no ledger")
    ap.add_argument("--rediscover", action="store_true",
                    help="do not turn down the shapes of the ledger's known bugs (by default the generator avoids "
                         "them, so the run's programs go to what is not known yet)")
    ap.add_argument("--no-bundles", action="store_true", help="do not write a bundle of each new bug into the run "
                    "directory")
    add_steer(ap)
    add_json(ap, "print the summary as JSON")
    ap.add_argument("--quiet", action="store_true", help="no progress line")
    return ap


def _interrupted(command: str, out: Path) -> int:
    """Ctrl-C (or SIGTERM) ended a run: say where what was judged is, and how to go on (exit 130)."""
    record = out / "results.jsonl"
    n = sum(1 for _ in record.open()) if record.is_file() else 0
    print(f"fuzzptx {command}: interrupted; {n} judged program(s) kept in {record} (`fuzzptx report {out}` "
          f"summarises them, `--resume --out {out}` carries on)", file=sys.stderr)
    return 130


def main_run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.illegal_share > 1:
        raise OptionError(f"--illegal-share {args.illegal_share}: expected a share between 0 and 1")
    known = ledger(args.known)  # before the run: a bad file costs nothing
    if args.resume and not args.out:
        raise OptionError("--resume: say which run to carry on with --out DIR")
    judges = judges_of(args, "run")
    out_dir = Path(args.out) if args.out else engine_run.default_out(args.seed)
    workers = (os.cpu_count() or 1) if args.workers is None else args.workers
    kernels = kernel_files(args.kernels)
    try:
        summ = engine_run.run(args.examples, args.seed, judges, out_dir, batch=args.batch,
                              illegal_share=args.illegal_share, shrink_budget=args.shrink_budget,
                              progress=not args.quiet and not args.json, numerics=args.numerics,
                              generator=args.generator, workers=workers, shrink_model_gaps=args.shrink_model_gaps,
                              resume=args.resume, steer=args.steer, kernels=kernels,
                              avoid=frozenset() if args.rediscover else avoided(known, {"numerics": args.numerics}))
    except KeyboardInterrupt:
        return _interrupted("run", out_dir)
    b = bugs.summarise({"buckets": summ["findings_by_bucket"], **summ}, known, {"numerics": args.numerics}, out_dir,
                       bundles=not args.no_bundles)
    summ["bugs"] = b
    summ["known"] = {x["cause"]: x["known"] for x in b["bugs"] if x["known"]}
    summ["new_findings"] = sum(x["count"] for x in b["bugs"] if x["new"])
    summ["sass_real_kernels"] = real_kernels_reached(summ)
    (out_dir / "summary.json").write_text(json.dumps(summ, indent=1))
    if args.json:
        print(json.dumps(summ, indent=1))
    else:
        print(engine_run.format_summary(summ, out_dir, bugs.format_bugs(summ["bugs"])))
    return 1 if summ["block_errors_total"] else 0


def campaign_config(args) -> tuple[RunConfig, dict]:
    """The campaign ``fuzzptx campaign ARGS`` runs, resolved once from its parsed options (judges
    and their pairs, shard, generator settings, the ledger's avoided shapes, the scalar share,
    workers), and the known-bug ledger it reads: the CLI and the benchmarks that measure "a
    campaign with the default settings" take it from here."""
    if args.time is None and args.examples is None and args.corpus is None:
        raise CampaignError("say how much to do: --time DURATION or --examples N (or --corpus DIR)")
    judges = judges_of(args, "campaign")
    if args.shard is not None:
        shard = parse_shard(args.shard)
    else:
        found = shard_from_env()
        shard = (0, 1) if found is None else found[0]
        if found is not None and not args.quiet:
            _say(f"fuzzptx campaign: shard {shard[0]}/{shard[1]} (from {found[1]})")
    seconds = parse_duration(args.time) if args.time else None
    gpus = parse_gpus(args.gpus)
    corpus, corpus_skipped = None, ()
    if args.corpus:
        good, skipped = usable_corpus(corpus_files(args.corpus))
        for line in skipped:
            _say(f"fuzzptx campaign: --corpus: skipped {line}")
        if not good:
            raise CampaignError(f"--corpus {args.corpus}: none of its {len(skipped)} .ptx files is a fuzzptx program")
        corpus, corpus_skipped = tuple(good), tuple(skipped)
    judges = gpu_judges_usable(judges, gpus, args.gpus != "none", lambda m: _say(f"fuzzptx campaign: {m}"))
    workers = args.workers or max(1, (os.cpu_count() or 2) - (1 if judges.needing(DEVICE) else 0))
    known = ledger(args.known)
    numerics = args.numerics if args.numerics or corpus else default_numerics(judges)
    avoid = frozenset() if args.rediscover or corpus else avoided(known, {"numerics": numerics or "spec"})
    scalar_share = args.scalar_share if args.scalar_share is not None else (
        SCALAR_SHARE if judges.needing(DEVICE) and not corpus else 0.0)
    config = RunConfig(seed=args.seed, block_size=args.block_size, shard=shard, examples=args.examples,
                       seconds=seconds, judges=judges, corpus=corpus, corpus_skipped=corpus_skipped,
                       plant=args.plant_faults, generator=args.generator, numerics=numerics, avoid=avoid,
                       scalar_share=scalar_share,
                       out=Path(args.out), workers=workers, gpus=tuple(gpus), steer=args.steer,
                       kernels=kernel_files(args.kernels))
    return config, known


def main_campaign(argv: list[str]) -> int:
    try:
        args = campaign_parser().parse_args(argv)
    except OptionError as exc:
        raise CampaignError(str(exc)) from None
    config, known = campaign_config(args)
    gpus = list(config.gpus)
    workers = config.workers
    try:
        stats = run_campaign(config.out, config, gpus=gpus, resume=args.resume, workers=workers,
                             gpu_timeout=args.gpu_timeout, gpu_workers=args.gpu_workers, progress=not args.quiet,
                             force_takeover=args.force_takeover, stale_after=args.stale_after)
    except KeyboardInterrupt:
        return _interrupted("campaign", config.out)
    stats["bugs"] = bugs.summarise(stats, known, {"numerics": stats["numerics"]}, config.out,
                                   bundles=not args.no_bundles)
    stats["sass_real_kernels"] = real_kernels_reached(stats)
    _write_json(config.out / "stats.json", stats)
    for line in bugs.format_bugs(stats["bugs"]):
        _say("fuzzptx campaign:" + line)
    if stats.get("sass_forms_reached") is not None:
        _say("fuzzptx campaign: SASS coverage: " + engine_run.sass_line(stats))
    print(json.dumps({k: v for k, v in stats.items() if k not in ("timeline", "sass_coverage", "sass_timeline")},
                     indent=1))
    return 0
