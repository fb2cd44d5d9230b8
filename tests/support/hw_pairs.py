"""Compile pairs on the H100: the -O0 != -O3 suite through ``fuzzptx replay``, and a probe for new ones.

    # on the GPU machine (the device tool's copy of the tree; results to $OUT)
    python3 tests/support/hw_pairs.py --probe 2000 --found $OUT/found --suite tests/data/pairs --out $OUT/pairs_h100.json
    # here, no GPU: the reference stands in for the GPU worker (every build still compiled by real ptxas)
    python tests/support/hw_pairs.py --probe 40 --suite tests/data/pairs --dry-run --out /tmp/pairs.json

``--write-suite DIR`` writes the tensor-core part of the suite (repeated wgmmas that ptxas 13.0.88
collapses at -O3: ``benchmarks/probe_dup_wgmma.py`` measured 35 of 49 such kernels wrong at -O3 and
right at -O0 on the H100) as repro files whose SIGNATURE names the pair that must flag them.
``--probe N`` draws N random integer kernels (``scalar_probe.kernel``), builds each at -O3, -O0, -O1
and -O2 (one batched ptxas run per build) and runs them through the pairs' GPU judge on two input
sets; every kernel with a pair disagreement is written to ``--found`` with its signature.
``--suite DIR`` runs ``fuzzptx replay FILE --json`` (the CLI, in a fresh process) on every file and
records whether the pair its SIGNATURE names was flagged.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))

sys.path.insert(0, str(ROOT / "benchmarks"))
from probe_dup_wgmma import FORMS as SUITE_FORMS  # noqa: E402  (the forms the H100 probe measured collapsing)

SUITE_VARIANTS = ((2, False, False), (2, True, False), (3, False, True))


def device_info() -> dict:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from campaign_device import device_info as info

    return info()


def write_suite(out: Path) -> list[Path]:
    """The tensor-core part of the -O0 != -O3 suite (small_int data: exact in every type)."""
    from fuzzptx.builders import repeated_wgmma, wgmma_program
    from fuzzptx.judges.programs import program_family

    out.mkdir(parents=True, exist_ok=True)
    files = []
    for key in SUITE_FORMS:
        for copies, commit, zero in SUITE_VARIANTS:
            p = repeated_wgmma(wgmma_program(key, seed=7, init="small_int", scale_d=not zero), copies, commit, zero)
            sig = f"hardware:O3!=O0|mismatch|{program_family(p)}"
            p = replace(p, signature=sig, notes=p.notes + (
                f"repeated wgmma x{copies}{' with a commit between' if commit else ''}"
                f"{', the first with scale-d 0' if zero else ''}: ptxas 13.0.88 -O3 collapses the copies "
                "(reports/findings/README.md); -O0 keeps them",))
            name = f"repeat_{key.split('.')[4]}_{'.'.join(key.split('|')[0].split('.')[5:])}_{key.split('=')[1]}_x{copies}" \
                   f"{'_commit' if commit else ''}{'_zero_first' if zero else ''}.ptx"
            (out / name).write_text(p.to_ptx())
            files.append(out / name)
    return files


def write_found(record: Path, out: Path, limit: int) -> list[Path]:
    """The ``limit`` shortest probe kernels a record flagged, rebuilt from their seeds (the generator
    is deterministic) with the pair that flagged them as their SIGNATURE."""
    from support.scalar_probe import kernel

    from fuzzptx.program import Program

    rows = [r for r in json.loads(record.read_text())["probe"]["rows"] if r.get("findings")]
    rows.sort(key=lambda r: len(kernel(r["seed"])))
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for r in rows[:limit]:
        p = Program.from_ptx(kernel(r["seed"]), f"probe{r['seed']}.ptx")
        sig = next(x for x in r["findings"] if "nondeterministic" not in x)
        p = replace(p, signature=sig, notes=p.notes + (f"flagged on the GPU by tests/support/hw_pairs.py --probe "
                                                       f"({record.name}): {', '.join(r['findings'])}",))
        (out / f"scalar_probe_{r['seed']}.ptx").write_text(p.to_ptx())
        files.append(out / f"scalar_probe_{r['seed']}.ptx")
    return files


def probe(n: int, found: Path, worker, inputs: int = 2, seed0: int = 0, mix: str = "v1",
          avoid: frozenset = frozenset()) -> dict:
    """Random integer kernels through the -O3/-O0/-O1/-O2 pairs on ``worker`` (``mix`` and
    ``avoid``: ``scalar_probe.kernel``'s)."""
    from support.scalar_probe import kernel

    from fuzzptx.judges import metamorphic as M
    from fuzzptx.judges.programs import program_family
    from fuzzptx.program import Program

    t0 = time.perf_counter()
    programs = [Program.from_ptx(kernel(seed0 + s, mix=mix, avoid=avoid), f"probe{seed0 + s}.ptx") for s in range(n)]
    pairs = ("O0", "O1", "O2")
    prepared = []
    for p in programs:
        pp = M.prepare_pairs(p, pairs=pairs, reference=M.Unsupported("probe: the reference is not asked"))
        prepared.append(pp)
    keys = [(s.program.to_ptx(), s.build) for pp in prepared if isinstance(pp, M.PreparedPairs)
            for v in pp.variants for s in (v.left, v.right)]
    built = M.compile_builds(list(dict.fromkeys(keys)), parallel=True)
    t_compile = time.perf_counter() - t0
    judge = M.HardwareJudge(worker, _built=built)
    found.mkdir(parents=True, exist_ok=True)
    rows, hits = [], 0
    for s, (p, pp) in enumerate(zip(programs, prepared)):
        if not isinstance(pp, M.PreparedPairs):
            rows.append({"seed": seed0 + s, "skipped": pp.skipped})
            continue
        checked = pp.judge(judge, inputs=inputs)
        sigs = [f.signature for _, f in checked.findings]
        rows.append({"seed": seed0 + s, "findings": sigs})
        real = [x for x in sigs if "nondeterministic" not in x]
        if real:
            hits += 1
            sig = real[0]
            kept = replace(p, signature=sig, notes=p.notes + (f"found by tests/support/hw_pairs.py --probe: {', '.join(sigs)}",))
            (found / f"scalar_probe_{seed0 + s}.ptx").write_text(kept.to_ptx())
    return {"kernels": n, "mix": mix, "avoided": sorted(avoid), "pairs": list(pairs), "inputs_per_pair": inputs, "with_findings": hits,
            "compile_seconds": round(t_compile, 1), "seconds": round(time.perf_counter() - t0, 1),
            "families": sorted({program_family(p) for p in programs}), "rows": rows}


def explain(files: list[Path], worker) -> dict:
    """Which build is wrong: each file's outputs at -O3, -O0 (pinned) and -O3 of the newest cached
    release on the GPU, each set against the reference's (spec numerics, its undefined elements
    masked), on the file's own input."""
    from fuzzptx.judges import metamorphic as M
    from fuzzptx.judges.compile_pairs import BASE, Build, newest_release
    from fuzzptx.oracles.reference import run_program
    from fuzzptx.oracles.reference.values import UNDEF
    from fuzzptx.program import Program

    rel = newest_release()
    builds = {"O3": BASE, "O0": Build(0)} | ({f"{rel} O3": Build(3, (), rel)} if rel else {})
    judge = M.HardwareJudge(worker)
    rows, tally = [], {}
    for f in files:
        p = Program.from_file(f)
        row: dict = {"file": f.name}
        try:
            ref = run_program(p, mode="spec")
        except Exception as exc:  # noqa: BLE001 - the row says why
            row["reference"] = f"{type(exc).__name__}: {str(exc)[:160]}"
            rows.append(row)
            continue
        defined = {n: o.kind != UNDEF for n, o in ref.outputs.items()}
        ref_out = {n: o.data for n, o in ref.outputs.items()}
        for name, b in builds.items():
            o = judge.run(p, b)
            if o.fault:
                row[name] = f"fault: {o.fault}"
            else:
                d = M.first_difference(p, o.outputs, ref_out, defined)
                row[name] = "= reference" if d is None else f"!= reference: {d.count} of {d.compared} differ, first {d.buffer}[{d.index}] {d.left} vs {d.right}"
        key = tuple((n, row[n].split(":")[0].split(" ")[0]) for n in builds)
        tally[str(key)] = tally.get(str(key), 0) + 1
        rows.append(row)
    return {"builds": {n: str(b) for n, b in builds.items()}, "files": len(files), "tally": tally, "rows": rows}


def replay_one(path: Path, timeout: float, judges: str | None = None) -> dict:
    text = path.read_text()
    m = re.search(r"^// SIGNATURE: (\S+)", text, re.M)
    want = m.group(1) if m else None
    t0 = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-m", "fuzzptx.cli", "replay", str(path.resolve()), "--json"]
                           + (["--judges", judges] if judges else []),
                           capture_output=True, text=True, timeout=timeout, cwd="/tmp")
    except subprocess.TimeoutExpired:
        return {"file": path.name, "expected": want, "error": f"timed out after {timeout} s"}
    row: dict = {"file": path.name, "expected": want, "exit": r.returncode, "seconds": round(time.perf_counter() - t0, 1)}
    if "Traceback" in r.stderr:
        row["traceback"] = r.stderr[-1500:]
    try:
        out = json.loads(r.stdout)
    except json.JSONDecodeError:
        row["error"] = (r.stderr or r.stdout)[-400:]
        return row
    sigs = [f["signature"] if isinstance(f, dict) else str(f) for f in out.get("findings", [])]
    row["findings"] = sigs
    meta = next((j for j in out.get("judges", []) if j.get("judge") == "metamorphic"), None)
    row["metamorphic"] = meta
    want_pair = want.rsplit("|", 1)[0] if want else None
    row["flagged"] = bool(want_pair) and any(s.startswith(want_pair) for s in sigs)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write-suite", type=Path, help="write the tensor-core suite files here and stop")
    ap.add_argument("--write-found", type=Path, metavar="RECORD", help="with --write-suite: also the shortest "
                    "probe kernels RECORD flagged")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--probe", type=int, default=0, help="random integer kernels to probe")
    ap.add_argument("--probe-seed", type=int, default=0)
    ap.add_argument("--probe-mix", default="v1", help="scalar_probe.KINDS: v1 (the suite's kernels) or v2 (more op kinds)")
    ap.add_argument("--avoid-known", action="store_true",
                    help="turn down the known bugs' shapes (scalar_probe.AVOIDABLE): what the probe finds is then new")
    ap.add_argument("--no-replay-found", action="store_true", help="do not replay the probe's found kernels")
    ap.add_argument("--found", type=Path, default=Path("/tmp/pairs_found"))
    ap.add_argument("--suite", type=Path, action="append", default=[], help="replay every .ptx here")
    ap.add_argument("--explain", type=Path, action="append", default=[],
                    help="for every .ptx here: which build (-O3, -O0, the newest release) agrees with the reference")
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--judges", default=None, help="replay's --judges (a plain kernel names no signature: "
                    "add metamorphic to run the pairs)")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: the reference stands in for the GPU worker")
    ap.add_argument("--out", type=Path, required=False)
    args = ap.parse_args()
    if args.write_suite:
        files = write_found(args.write_found, args.write_suite, args.limit) if args.write_found else write_suite(args.write_suite)
        for f in files:
            print(f)
        return 0
    from fuzzptx.judges import metamorphic as M
    from fuzzptx.judges.compile_pairs import newest_release

    record: dict = {"what": "compile pairs on the GPU: the -O0 != -O3 suite through fuzzptx replay, and a probe",
                    "command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "device": {"device": "none: dry run"} if args.dry_run else device_info(),
                    "newest_release": newest_release()}
    from support.scalar_probe import AVOIDABLE

    probe_kw = {"mix": args.probe_mix, "avoid": frozenset(AVOIDABLE) if args.avoid_known else frozenset()}
    if args.probe:
        if args.dry_run:
            record["probe"] = probe(args.probe, args.found, M.ReferenceWorker(), seed0=args.probe_seed, **probe_kw)
        else:
            from fuzzptx.oracles.hardware import HardwareWorker

            with HardwareWorker() as w:
                record["probe"] = probe(args.probe, args.found, w, seed0=args.probe_seed, **probe_kw)
                record["probe"]["worker_restarts"] = w.restarts
        print(json.dumps({k: v for k, v in record["probe"].items() if k != "rows"}))
    if args.explain:
        files = [f for d in args.explain for f in sorted(d.glob("*.ptx"))]
        if args.dry_run:
            record["explain"] = explain(files[:3], M.ReferenceWorker())
        else:
            from fuzzptx.oracles.hardware import HardwareWorker

            with HardwareWorker() as w:
                record["explain"] = explain(files, w)
        print(json.dumps(record["explain"]["tally"]))
    suites = list(args.suite) + ([args.found] if args.probe and args.found.exists() and not args.no_replay_found else [])
    rows = []
    files = [f for d in suites for f in sorted(d.glob("*.ptx"))]
    if args.dry_run:
        files = files[:4]
    def save(done: bool) -> None:
        """The record so far (rewritten after each file: a run cut short by its time limit keeps its rows)."""
        record["suite"] = {"files": len(files), "replayed": len(rows), "complete": done,
                           "flagged": sum(1 for r in rows if r.get("flagged")),
                           "tracebacks": sum(1 for r in rows if r.get("traceback")),
                           "rows": sorted(rows, key=lambda r: r["file"])}
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(record, indent=1) + "\n")

    with cf.ThreadPoolExecutor(args.jobs) as ex:
        for fut in cf.as_completed([ex.submit(replay_one, f, 300, args.judges) for f in files]):
            row = fut.result()
            rows.append(row)
            print(row["file"], "flagged" if row.get("flagged") else "NOT flagged", row.get("findings"), flush=True)
            save(False)
    save(True)
    print(json.dumps({k: v for k, v in record["suite"].items() if k != "rows"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
