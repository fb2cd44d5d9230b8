"""Snapshot what the checker and the reference say of a fixed set of programs, to prove that a
speed change changes nothing (and to time both judges on the same programs).

    python benchmarks/judge_snapshot.py save --out /tmp/judges.pkl [--dir DIR_OF_PTX] [--n 200]
    # ... change the code ...
    python benchmarks/judge_snapshot.py cmp --out /tmp/judges.pkl [same options]

Programs: ``--n`` from ``campaign.draw_direct`` (seed ``--seed``), plus every ``*.ptx`` in
``--dir``.  Per program it keeps ``repr`` of ``check_and_predict`` and a hash of the pickled
reference result; ``cmp`` lists the programs whose entries differ and prints the judges' times.
"""
from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
from pathlib import Path


def snapshot(n: int, seed: int, directory: str | None) -> tuple[dict, dict]:
    from fuzzptx.judges import differ
    from fuzzptx.engine.generate import draw_direct
    from fuzzptx.program import Program

    progs = [(f"direct:{i}", p, p.to_ptx()) for i, p in enumerate(draw_direct(n, seed))]
    for f in sorted(Path(directory).glob("*.ptx")) if directory else ():
        text = f.read_text()
        try:
            progs.append((f.name, Program.from_ptx(text, str(f)), text))
        except Exception as exc:  # noqa: BLE001 - a file that does not parse is skipped, and said
            print(f"{f}: skipped: {exc}", file=sys.stderr)
    out: dict = {}
    secs = {"checker": 0.0, "reference": 0.0}
    for key, p, text in progs:
        judged = differ.as_judged(p, text)[0]
        v = differ.judge(judged, ("checker", "reference"), text=text, judged=judged)
        for j in secs:
            secs[j] += v.seconds.get(j, 0.0)
        out[(key, "checker")] = repr((v.checker, v.predicted, v.checker_error))
        ref = pickle.dumps((v.reference_error, v.reference_skipped, v.reference and v.reference.summary(),
                            v.reference and {k: (b.data, b.kind.tobytes(), b.lo.tobytes(), b.hi.tobytes(),
                                                  b.flags.tobytes()) for k, b in v.reference.outputs.items()}))
        out[(key, "reference")] = hashlib.sha256(ref).hexdigest()
    return out, {j: round(s / max(len(progs), 1) * 1000, 2) for j, s in secs.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("save", "cmp"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=777)
    ap.add_argument("--dir", default=None)
    a = ap.parse_args(argv)
    snap, ms = snapshot(a.n, a.seed, a.dir)
    print(f"{len(snap) // 2} programs; ms/program {ms}")
    if a.mode == "save":
        Path(a.out).write_bytes(pickle.dumps(snap))
        return 0
    old = pickle.loads(Path(a.out).read_bytes())
    bad = sorted(k for k in snap if old.get(k) != snap[k])
    print(f"{len(bad)} differ" + (": " + ", ".join(f"{p} ({j})" for p, j in bad[:20]) if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
