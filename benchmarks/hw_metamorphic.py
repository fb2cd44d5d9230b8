"""Metamorphic pairs on the H100 (issue 7, item 1): -O3 vs -O0, pipelined vs serialised, plain vs
dead uniform branches, on strategy-drawn programs the spec defines. Writes one JSON record.

    python3 benchmarks/hw_metamorphic.py --n 300 --seed 1 --plant --out $OUT        # on the GPU machine
    python benchmarks/hw_metamorphic.py --n 12 --dry-run --plant --out /tmp/mm      # no GPU: ptxas, then the reference runs each side

On the device (no pip) the package travels as a copy on ``PYTHONPATH=/tmp/pkg`` with
``FUZZPTX_PTXAS=/usr/local/cuda/bin/ptxas`` if the PyPI ptxas is absent (see docs/numerics.md).
Steps: draw ``--n`` legal programs (``fuzzptx.engine.run.draw_programs``); on a process pool, keep those
the spec defines (``metamorphic.spec_defined``) and build their pairs; compile every side with
ptxas in batches at its opt level; run each pair on the GPU (``metamorphic.HardwareJudge``, one
worker, a fault costs a restart) and compare. A finding's two sides are written as repro files
under ``--out``/repros. ``--plant`` adds a deliberately wrong pair per wgmma program (one wgmma lost, chosen so that
the reference sees the loss): the record says how many the judge caught, a self-check of the path.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path


def versions() -> dict:
    """The device record every device script writes (``campaign_device.device_info``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from campaign_device import device_info

    return device_info()


def prepare(task: tuple[int, object, int, bool]):
    """CPU side for one program (pool process): eligibility, then its pairs."""
    from fuzzptx.judges import metamorphic as M

    idx, program, seed, planted = task
    t0 = time.perf_counter()
    if not program.module.target.split(",")[0].strip().startswith("sm_90"):
        return idx, f"target {program.module.target} (not Hopper)", None, [], time.perf_counter() - t0
    el = M.spec_defined(program)
    if not el.ok:
        return idx, el.reason, None, [], time.perf_counter() - t0
    pairs = M.metamorphic_pairs(program, seed=seed + idx, planted=planted, defined=el.defined)
    return idx, None, el.defined, pairs, time.perf_counter() - t0


def reason_bucket(reason: str) -> str:
    """A skip reason without its program-specific detail (for the counts)."""
    head = reason.split(" (", 1)[0]
    return head if len(head) <= 80 else head[:80]


def write_repro(out: Path, idx: int, variant, finding) -> list[str]:
    """Both sides of a finding as self-describing .ptx files (the same signature, side named in a NOTE)."""
    paths = []
    rdir = out / "repros"
    rdir.mkdir(parents=True, exist_ok=True)
    for side, other in ((variant.left, variant.right), (variant.right, variant.left)):
        note = (f"metamorphic: relation={variant.relation} side={side.name} ptxas=-O{side.opt_level} "
                f"pair={other.name} (-O{other.opt_level})")
        ev = "evidence: " + " ".join(f"{k}={v}" for k, v in finding.evidence)
        p = replace(side.program, signature=finding.signature, notes=side.program.notes + (note, ev))
        path = rdir / f"p{idx:04d}_{variant.relation}_{side.name}.ptx"
        path.write_text(p.to_ptx())
        paths.append(str(path))
    return paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="programs to draw")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dry-run", action="store_true", help="the reference instead of the GPU")
    ap.add_argument("--plant", action="store_true", help="add a deliberately wrong pair per wgmma program (metamorphic.planted_variant)")
    ap.add_argument("--time", type=float, default=480.0, help="stop comparing after this many seconds")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--gpu-timeout", type=float, default=5.0)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()

    from fuzzptx.judges import metamorphic as M
    from fuzzptx.engine.generate import draw_programs

    record: dict = {"tool": "hw_metamorphic", "command": " ".join(sys.argv), "seed": args.seed, "n": args.n,
                    "dry_run": args.dry_run, "judge": "reference" if args.dry_run else "hardware",
                    "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "versions": versions(),
                    "relations": {r: {"pairs": 0, "agree": 0, "findings": 0} for r in M.RELATIONS},
                    "findings": [], "buckets": {}, "seconds": {}}
    if args.plant:
        record["planted"] = {"pairs": 0, "caught": 0, "missed": []}
    rec_path = out / ("metamorphic_dry.json" if args.dry_run else "metamorphic_h100.json")

    def save() -> None:
        rec_path.write_text(json.dumps(record, indent=1, default=str))

    t0 = time.perf_counter()
    programs = draw_programs(args.n, args.seed, illegal_share=0.0)
    record["seconds"]["draw"] = round(time.perf_counter() - t0, 2)

    t0 = time.perf_counter()
    tasks = [(i, p, args.seed, args.plant) for i, p in enumerate(programs)]
    if args.jobs > 1:
        import multiprocessing

        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            prepared = list(pool.map(prepare, tasks, chunksize=2))
    else:
        prepared = [prepare(t) for t in tasks]
    record["seconds"]["prepare_wall"] = round(time.perf_counter() - t0, 2)
    record["seconds"]["prepare_cpu"] = round(sum(x[4] for x in prepared), 2)
    skipped = Counter(reason_bucket(r) for _, r, _, _, _ in prepared if r)
    record["programs"] = {"drawn": len(programs), "eligible": sum(1 for x in prepared if x[1] is None),
                          "skipped": dict(skipped.most_common())}
    save()
    print(f"{len(programs)} programs, {record['programs']['eligible']} eligible; skipped {dict(skipped)}", flush=True)

    if args.dry_run:  # the same path as on the GPU (every side through ptxas), the reference runs it
        worker = M.ReferenceWorker()
        judge = M.HardwareJudge(worker, name="reference")
    else:
        from fuzzptx.oracles.hardware import HardwareWorker

        worker = HardwareWorker(timeout=args.gpu_timeout)
        judge = M.HardwareJudge(worker)
    try:
        record["device"] = worker.start()
    except Exception as exc:  # HardwareUnavailable: say so in the record and stop
        record["error"] = f"{type(exc).__name__}: {exc}"
        save()
        print(record["error"], file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    judge.prepare([(s.program, s.opt_level) for _, r, _, pairs, _ in prepared if r is None
                   for v in pairs for s in (v.left, v.right)])
    built = list(judge._built.values())
    record["ptxas"] = {"sides": len(built), "accepted": sum(1 for r in built if r.accepted),
                       "seconds": round(time.perf_counter() - t0, 2)}
    record["seconds"]["ptxas"] = record["ptxas"]["seconds"]
    save()

    t0 = time.perf_counter()
    compared = 0
    buckets: Counter = Counter()
    for idx, reason, defined, pairs, _ in prepared:
        if reason is not None:
            continue
        if time.monotonic() - t_start > args.time:
            record["stopped_early"] = f"--time {args.time} s reached after {compared} programs"
            break
        program = programs[idx]
        fam = M.program_family(program)
        cache: dict = {}
        for v in pairs:
            f = M.compare_pair(v, judge, defined=defined, family=fam, cache=cache)
            if v.relation == M.PLANTED[0]:
                record["planted"]["pairs"] += 1
                if f is not None and f.signature.startswith(f"{judge.name}:{v.pair}|mismatch"):
                    record["planted"]["caught"] += 1
                else:
                    record["planted"]["missed"].append({"program": idx, "family": fam,
                                                        "finding": f.signature if f else None})
                continue
            rel = record["relations"][v.relation]
            rel["pairs"] += 1
            if f is None:
                rel["agree"] += 1
                continue
            rel["findings"] += 1
            buckets[f.signature] += 1
            record["findings"].append({"program": idx, "relation": v.relation, "signature": f.signature,
                                       "message": f.message, "evidence": dict(f.evidence),
                                       "repro": write_repro(out, idx, v, f)})
        compared += 1
        if compared % 10 == 0:
            record["buckets"] = dict(buckets.most_common())
            save()
    record["programs"]["compared"] = compared
    record["buckets"] = dict(buckets.most_common())
    record["seconds"]["compare"] = round(time.perf_counter() - t0, 2)
    record["worker_restarts"] = worker.restarts
    worker.close()
    record["seconds"]["total"] = round(time.monotonic() - t_start, 2)
    record["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save()
    summary = {k: record[k] for k in ("programs", "ptxas", "relations", "buckets", "seconds")}
    if args.plant:
        summary["planted"] = {k: v for k, v in record["planted"].items() if k != "missed"}
        summary["planted"]["missed"] = len(record["planted"]["missed"])
    print(json.dumps(summary, indent=1), flush=True)
    print(f"record: {rec_path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
