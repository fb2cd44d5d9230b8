"""The reducer refactor's before/after check: shrink a fixed set with a budget no run reaches (1000 s) and
write each shrunk text and its counts to DIR (rows.json); compare two DIRs byte for byte.

    PYTHONPATH=$PWD python3 benchmarks/reduce_refactor_snapshot.py DIR
"""

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fuzzptx.reduce import shrink
from fuzzptx.triage.corpus import keep_predicate as signature_predicate
from support.shrink_cases import W64, copy_kernel, pad, program as tprogram
from fuzzptx.program import Program


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    BUDGET = 1000.0
    cases = []
    for path in sorted((ROOT / "corpus").glob("*.ptx")):
        base = Program.from_file(path)
        if "hardware" in base.signature:
            continue
        for parts in (("stage", "loop", "dead", "call"), ("loop", "dead", "call")):
            try:
                p = Program.from_ptx(pad(path.read_text(), parts), str(path))
            except Exception:
                continue
            cases.append((f"padded_{'_'.join(parts)}/{path.stem}", p, base.signature, base))
    from support.shrink_cases import plant_predicate

    cases.append(("tests/copy_kernel_plant", copy_kernel(), plant_predicate("swizzle-off-by-one-bit"), None))
    body = "\n".join(
        [
            "\tmov.u32 %r1, 0;",
            "LOOP:",
            "\tadd.u32 %r1, %r1, 1;",
            "\tsetp.lt.u32 %p, %r1, 4;",
            "\t@%p bra LOOP;",
            *(f"\tadd.u32 %r{2 + i}, %r{1 + i}, {i};" for i in range(8)),
            "\tst.global.u32 [%g+512], %r9;",
            "\t" + W64,
            "\twgmma.commit_group.sync.aligned;",
            "\twgmma.wait_group.sync.aligned 0;",
            "\tst.global.f32 [%g], %f0;",
        ]
    )
    cases.append(("tests/no_fence", tprogram(body), "ptxas:C7519", None))
    func = ".func (.reg .b32 r) side(.reg .b32 x)\n{\n\tadd.u32 r, x, 1;\n\tmul.lo.u32 r, r, 3;\n\tret;\n}\n"
    body = "\n".join(
        [
            "\tcall (%r5), side, (%r1);",
            "\tst.global.u32 [%g+4], %r5;",
            "\twgmma.fence.sync.aligned;",
            "\t" + W64.replace("1, 1, 1, 0, 0;", "1, 2, 1, 0, 0;"),
            "\twgmma.commit_group.sync.aligned;",
            "\twgmma.wait_group.sync.aligned 0;",
            "\tst.global.f32 [%g], %f0;",
        ]
    )
    cases.append(("tests/func_error", tprogram(body, func), "ptxas:error", None))
    for path in sorted((ROOT / "reports/findings").glob("*.ptx")):
        p = Program.from_file(path)
        if p.signature and "hardware" not in p.signature:
            cases.append((f"findings/{path.stem}", p, p.signature, p))
    rows = {}
    for name, p, sig, base in cases:
        holds = sig if callable(sig) else signature_predicate(sig, base)
        sig = sig if isinstance(sig, str) else "plant:swizzle-off-by-one-bit"
        try:
            if not holds([p])[0]:
                rows[name] = {"holds": False}
                print(name, "does not hold", flush=True)
                continue
            res = shrink(p, holds, budget_s=BUDGET)
        except Exception as e:
            rows[name] = {"error": repr(e)[:200]}
            print(name, e, flush=True)
            continue
        text = res.program.to_ptx()
        (out / (name.replace("/", "__") + ".ptx")).write_text(text)
        rows[name] = {
            "signature": sig,
            "before": res.before,
            "after": res.after,
            "evaluations": res.evaluations,
            "seconds": round(res.seconds, 1),
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
        }
        print(name, rows[name], flush=True)
    (out / "rows.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
