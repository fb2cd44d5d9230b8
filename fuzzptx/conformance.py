"""Conformance of the ISA catalogue against real ptxas.

For every form in ``isa.forms()``: its minimal kernel (at the default target, at its
minimum target/version, with optional operands, with each immediate value and a
predicate scale-d on one representative per row) must be accepted, and each of its
nearest illegal neighbours (``fuzzptx.neighbours``) rejected.  Where ptxas disagrees
with the spec, the disagreement is either built into the catalogue
(``warp.SPEC_EXCEPTIONS``: the spec's form is compiled too and must still be
rejected) or pinned in ``PINNED`` here with the fact it records.  Anything else is
an unexplained discrepancy.

    python -m fuzzptx.conformance [--json] [--family F] [--every-n] [--write-report reports/conformance.md]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from fuzzptx import isa
from fuzzptx.errors import FuzzptxError
from fuzzptx.helptext import Formatter
from fuzzptx.inputs import output_file
from fuzzptx.conformance_report import render
from fuzzptx.isa import warp
from fuzzptx.isa.model import Form
from fuzzptx.kernels import build_target, default_version, minimal_kernel
from fuzzptx.neighbours import RULES, Case, neighbours
from fuzzptx.ptx.emit import emit
from fuzzptx.oracles.ptxas import compile_batch, compile_ptx
from fuzzptx.oracles.ptxas_diag import parse_diagnostics
from fuzzptx.oracles.ptxas_merge import merge, scan, split_stderr


# ------------------------------------------------------------------ pinned facts
@dataclass(frozen=True)
class Pin:
    """A known disagreement: cases matching ``rule`` (and ``when``) get ``outcome`` from ptxas."""

    rule: str  # full rule id, e.g. "wgmma.sp.version-below-minimum"
    outcome: str  # "accept" | "reject": what ptxas does
    fact: str  # the fact about ptxas, one line
    when: Callable[[Case], bool] = lambda c: True


PINNED: tuple[Pin, ...] = (
    Pin("mma.sp.imm-out-of-range", "accept",
        "ptxas accepts sparsity selector 2 for f16 mma.sp m16n8k32 with .f32 accumulators (spec and ptxas"
        " for every other k32 form: 0 or 1; a value outside is undefined behaviour, not rejected).",
        lambda c: c.detail == "sp_sel=2" and "m16n8k32" in c.form_key and c.form_key.endswith(".f32.f16.f16.f32")),
    Pin("mma.sp.reg-type-wrong", "accept",
        "ptxas accepts .f16x2 registers for the .f32 accumulator D of mma.sp (f16/bf16/tf32), which dense"
        " mma rejects.", lambda c: c.detail == "d:.f16x2"),
)


def pin_for(case: Case, accepted: bool) -> Pin | None:
    outcome = "accept" if accepted else "reject"
    for p in PINNED:
        if p.rule == case.rule and p.outcome == outcome and p.when(case):
            return p
    return None


# ------------------------------------------------------------------ the cases
def _representative(form: Form) -> bool:
    """One form per table row gets the immediate sweep: the smallest wgmma N, every warp form."""
    return not form.family.startswith("wgmma") or form.shape is None or form.shape.n <= 16


def legal_cases(form: Form) -> list[Case]:
    """Kernels that must compile if the catalogue is right about ``form``."""
    expect = "accept" if form.ptxas_accepts else "reject"
    fam = form.family
    out = [Case(form.key, f"{fam}.legal", minimal_kernel(form), expect, "default target")]
    tgt = build_target(form)
    if (tgt, default_version(form, tgt)) != (out[0].module.target, default_version(form, out[0].module.target)):
        out.append(Case(form.key, f"{fam}.legal-at-minimum", minimal_kernel(form, target=tgt,
                        version=default_version(form, tgt)), expect, f"{tgt} ptx {form.min_ptx[0]}.{form.min_ptx[1]}"))
    if any(o.optional for o in form.operands):
        out.append(Case(form.key, f"{fam}.legal-optional", minimal_kernel(form, include_optional=True), expect,
                        "optional operands"))
    if form.ptxas_accepts and _representative(form):
        for op in form.operands:
            if op.kind in ("imm", "pred_or_imm"):
                for v in op.values:
                    out.append(Case(form.key, f"{fam}.legal-imm", minimal_kernel(form, immediates={op.role: v}),
                                    "accept", f"{op.role}={v}"))
            if op.kind == "pred_or_imm":
                out.append(Case(form.key, f"{fam}.legal-imm", minimal_kernel(form, scale_d_pred=True), "accept",
                                f"{op.role}=pred"))
            if op.kind in ("vec", "reg", "addr"):
                for t in op.reg_types[1:]:  # every non-canonical register type the catalogue allows
                    alt = replace(form, operands=tuple(replace(o, reg_types=(t,)) if o is op else o
                                                       for o in form.operands))
                    out.append(Case(form.key, f"{fam}.legal-reg-type", minimal_kernel(alt, include_optional=True),
                                    "accept", f"{op.role}:{t}"))
    return out


def exception_cases() -> list[Case]:
    """The spec's own form for each ``warp.SPEC_EXCEPTIONS`` entry: ptxas must still reject it."""
    out = []
    for f in warp.spec_forms():
        fixed = warp.apply_exceptions(f)
        if fixed != f and fixed.ptxas_accepts:  # rewritten (not just marked): the spec text must fail
            for e in warp.exceptions_for(f):
                out.append(Case(f.key, f"{f.family}.spec-{e.rule}", minimal_kernel(f), "reject", e.spec_says))
    return out


def all_cases(forms: Sequence[Form] | None = None, *, every_n: bool = False) -> list[Case]:
    """Legal cases and neighbours of ``forms`` (default: all), plus the spec-exception
    cases of those forms."""
    forms = isa.forms() if forms is None else forms
    cases: list[Case] = []
    for f in forms:
        cases += legal_cases(f) + neighbours(f, every_n=every_n)
    keys = {f.key for f in forms}
    return cases + [c for c in exception_cases() if c.form_key in keys]


# ------------------------------------------------------------------ running ptxas
CASCADE = "formal parameter"  # an error another kernel's wmma error can cause (see _verdicts)

def _verdicts(texts: list[str], arch: str, batch: int = 96) -> list[tuple[bool, str]]:
    """(accepted, first error) per module, from merged ptxas runs.

    An error line ptxas attributes to one input's own lines rejects that input (PTX
    errors are local to a kernel); inputs of a failed run with no error of their own
    are judged again.  Faster than ``compile_batch`` for mostly-illegal batches,
    which re-runs every rejected input alone to get its exact diagnostics.
    """
    shapes = [scan(t) for t in texts]
    out: list[tuple[bool, str] | None] = [None] * len(texts)

    def judge(idxs: list[int]) -> None:
        if len(idxs) <= 2:
            for i, r in zip(idxs, compile_batch([texts[i] for i in idxs], arch=arch, opt_level=0)):
                out[i] = (r.accepted, r.errors()[0].message if r.errors() else "")
            return
        merged = merge([texts[i] for i in idxs], [shapes[i] for i in idxs], idxs)
        r = compile_ptx(merged.text, arch=arch, opt_level=0, want_cubin=False)
        if r.accepted:
            for i in idxs:
                out[i] = (True, "")
            return
        parts = None if r.timed_out else split_stderr(r.stderr, merged, idxs, [shapes[i] for i in idxs])
        if parts is None:
            half = len(idxs) // 2
            judge(idxs[:half])
            judge(idxs[half:])
            return
        rest = []
        for k, i in enumerate(idxs):
            errs = [d for d in parse_diagnostics("\n".join(parts[k])) if d.severity == "error"]
            if errs and not any(CASCADE in d.message for d in errs):
                out[i] = (False, errs[0].message)
            elif errs:
                judge([i])
            else:
                rest.append(i)
        if rest:
            judge(rest)

    for s in range(0, len(texts), batch):
        judge(list(range(s, min(s + batch, len(texts)))))
    return out  # type: ignore[return-value]


def run_cases(cases: Sequence[Case], jobs: int = 2, alone: bool = False) -> list[tuple[bool, str]]:
    """ptxas's verdict on every case: identical texts are compiled once, merged only
    with texts of the same header (.version and .target change what ptxas says)."""
    from concurrent.futures import ThreadPoolExecutor

    texts = [emit(c.module) for c in cases]
    uniq: dict[tuple[str, str], int] = {}
    for c, t in zip(cases, texts):
        uniq.setdefault((c.module.target, t), len(uniq))
    by_head: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for (arch, t), i in uniq.items():
        by_head[(arch, t.split("\n", 1)[0])].append((i, t))
    size = 1 if alone else 384
    chunks = [(head[0], items[s:s + size]) for head, items in by_head.items() for s in range(0, len(items), size)]
    results: dict[int, tuple[bool, str]] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for (_arch, items), verdicts in zip(chunks, pool.map(lambda ch: _verdicts([t for _, t in ch[1]], ch[0]), chunks)):
            results.update({i: v for (i, _), v in zip(items, verdicts)})
    return [results[uniq[(c.module.target, t)]] for c, t in zip(cases, texts)]


# ------------------------------------------------------------------ summary
@dataclass(frozen=True)
class Outcome:
    case: Case
    accepted: bool
    error: str
    pin: Pin | None

    @property
    def as_expected(self) -> bool:
        return self.accepted == (self.case.expect == "accept")

    @property
    def discrepancy(self) -> bool:
        return not self.as_expected

    def explanation(self) -> str:
        """One line, generated from the rule and what ptxas did."""
        c = self.case
        what = RULES.get(c.rule_name, c.rule_name.replace("-", " "))
        if self.pin is not None:
            return self.pin.fact
        if self.accepted:
            return f"ptxas accepts it ({what}: {c.detail}) though the catalogue says it is illegal"
        return f"ptxas rejects the catalogue's form ({c.detail}): {self.error}"


def evaluate(cases: Sequence[Case], jobs: int = 2) -> list[Outcome]:
    """Run every case; each discrepancy is confirmed by compiling its kernel alone."""
    verdicts = run_cases(cases, jobs)
    confirm = [i for i, (c, (acc, _)) in enumerate(zip(cases, verdicts)) if acc != (c.expect == "accept")]
    if confirm:
        again = run_cases([cases[i] for i in confirm], jobs, alone=True)
        for i, v in zip(confirm, again):
            verdicts[i] = v
    return [Outcome(c, acc, err, pin_for(c, acc) if (acc != (c.expect == "accept")) else None)
            for c, (acc, err) in zip(cases, verdicts)]


def summary(outcomes: Sequence[Outcome]) -> dict:
    legal = [o for o in outcomes if ".legal" in o.case.rule]
    forms_ok: dict[str, bool] = {}
    for o in legal:
        forms_ok[o.case.form_key] = forms_ok.get(o.case.form_key, True) and (o.as_expected or o.pin is not None)
    spec_only = {k for k in forms_ok if not isa.by_key(k).ptxas_accepts}
    neigh = [o for o in outcomes if ".legal" not in o.case.rule]
    disc = [o for o in outcomes if o.discrepancy]
    return {
        "forms": len(forms_ok),
        "forms_accepted": sum(ok for k, ok in forms_ok.items() if k not in spec_only),
        "forms_spec_only_rejected": sum(forms_ok[k] for k in spec_only),
        "cases": len(outcomes),
        "legal_cases": len(legal),
        "legal_cases_as_expected": sum(o.as_expected for o in legal),
        "neighbours": len(neigh),
        "neighbours_rejected": sum(not o.accepted for o in neigh),
        "discrepancies": len(disc),
        "pinned_discrepancies": sum(o.pin is not None for o in disc),
        "unexplained_discrepancies": sum(o.pin is None for o in disc),
        "by_rule": {r: dict(c) for r, c in sorted(_by_rule(outcomes).items())},
    }


def _by_rule(outcomes: Sequence[Outcome]) -> dict[str, Counter]:
    out: dict[str, Counter] = defaultdict(Counter)
    for o in outcomes:
        out[o.case.rule]["cases"] += 1
        out[o.case.rule]["as_expected" if o.as_expected else ("pinned" if o.pin else "unexplained")] += 1
    return out


def unused_pins(outcomes: Sequence[Outcome]) -> list[Pin]:
    used = {id(o.pin) for o in outcomes if o.pin is not None}
    return [p for p in PINNED if id(p) not in used]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fuzzptx conformance", description=__doc__.split("\n")[0], formatter_class=Formatter)
    ap.add_argument("--json", action="store_true", help="print the counts as JSON")
    ap.add_argument("--write-report", metavar="PATH", help="write the Markdown report here")
    ap.add_argument("--family", choices=isa.families(), metavar="FAMILY",
                    help=f"only forms of this family ({', '.join(isa.families())})")
    ap.add_argument("--jobs", type=int, default=2, help="ptxas processes run at once (at least 1)")
    ap.add_argument("--every-n", action="store_true",
                    help="N-independent wgmma neighbours at every N, not only at the representative N")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        raise FuzzptxError(f"--jobs {args.jobs}: expected a positive number of ptxas processes")
    forms = isa.forms(args.family) if args.family else isa.forms()
    if args.write_report:
        output_file(args.write_report, what="report")  # said before the minutes of ptxas runs, not after
    t0 = time.perf_counter()
    outcomes = evaluate(all_cases(forms, every_n=args.every_n), args.jobs)
    s = summary(outcomes)
    s["seconds"] = round(time.perf_counter() - t0, 1)
    if args.write_report:
        path = output_file(args.write_report, what="report")
        cmd = " ".join(["python -m fuzzptx.conformance", *(argv if argv is not None else sys.argv[1:])])
        path.write_text(render(outcomes, s, cmd))
    if args.json:
        print(json.dumps({k: v for k, v in s.items()}, indent=1))
    else:
        for k, v in s.items():
            if k != "by_rule":
                print(f"{k}: {v}")
    return 0 if s["unexplained_discrepancies"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
