"""Coverage of the instruction space: ``python -m fuzzptx.strategies.coverage -n N``.

Draws N programs and prints the share of catalogue forms (per family), swizzle
modes and control-flow kinds they reach.  Everything is read back from the
programs' IR (not from the strategies' internals), so the report also measures
programs built elsewhere (``measure(programs)``).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

from fuzzptx import isa
from fuzzptx.isa.encoding import SWIZZLE_FIELD, SWIZZLE_NAMES, descriptor_field
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Function, Imm, Instr, Label, Reg
from .programs import programs
from .programs import warp_programs, wgmma_programs

CONTROL_KINDS = ("straight", "loop", "uniform_branch", "divergent_branch", "predicated", "call",
                 "call_indirect", "extern_decl", "multi_warpgroup", "early_exit", "wait_group_n>0",
                 "scale_d_predicate")


@dataclass
class Coverage:
    programs: int = 0
    forms: Counter = field(default_factory=Counter)  # form key -> programs reaching it
    swizzles: Counter = field(default_factory=Counter)
    control: Counter = field(default_factory=Counter)
    text_checked: int = 0  # programs whose emitted PTX was parsed back and gave the same forms
    first_seen: dict = field(default_factory=dict)  # form key -> index of the first program reaching it

    def add(self, p: Program, *, check_text: bool = False) -> None:
        self.programs += 1
        keys, swz, ctl = program_features(p)
        if check_text:
            back = Program.from_ptx(p.to_ptx())
            again = program_features(back)[0]
            if again != keys:
                raise AssertionError(f"program {self.programs}: forms in the IR {sorted(keys - again)} "
                                     f"and in its PTX text {sorted(again - keys)} differ")
            self.text_checked += 1
        for k in keys:
            self.first_seen.setdefault(k, self.programs)
        self.forms.update(keys)
        self.swizzles.update(swz)
        self.control.update(ctl)

    def summary(self) -> dict:
        """The figures of ``report`` as plain data (for benchmarks/results)."""
        total = [f for f in isa.forms() if f.ptxas_accepts]
        fams = {}
        for fam in isa.families():
            fs = [f for f in total if f.family == fam]
            fams[fam] = [sum(1 for f in fs if f.key in self.forms), len(fs)]
        seen = sorted(self.first_seen[f.key] for f in total if f.key in self.first_seen)
        return {"programs": self.programs, "forms_reached": sum(v[0] for v in fams.values()),
                "forms_total": len(total), "spec_only_forms": len(isa.forms()) - len(total),
                "families": fams, "missing": self.missing_forms(),
                "last_new_form_at_program": seen[-1] if seen else None,
                "swizzles": dict(self.swizzles), "control": dict(self.control),
                "text_checked": self.text_checked}

    def missing_forms(self) -> list[str]:
        """Unreached forms among those ptxas accepts (the ones legal programs can hold)."""
        return [f.key for f in isa.forms() if f.ptxas_accepts and f.key not in self.forms]

    def report(self) -> str:
        lines = [f"programs: {self.programs}"]
        total = [f for f in isa.forms() if f.ptxas_accepts]
        hit_all = sum(1 for f in total if f.key in self.forms)
        lines.append(f"forms reached: {hit_all}/{len(total)} ({100 * hit_all / len(total):.1f}%) "
                     f"of the forms ptxas accepts ({len(isa.forms()) - len(total)} spec-only forms: "
                     "spec_only_programs())")
        for fam in isa.families():
            fs = [f for f in isa.forms(fam) if f.ptxas_accepts]
            hit = sum(1 for f in fs if f.key in self.forms)
            lines.append(f"  {fam:20s} {hit:5d}/{len(fs):<5d} ({100 * hit / max(1, len(fs)):5.1f}%)")
        lines.append("swizzle modes (descriptors built): " + ", ".join(
            f"{m}={self.swizzles.get(m, 0)}" for m in SWIZZLE_NAMES.values()))
        lines.append("control-flow kinds (share of programs):")
        for k in CONTROL_KINDS:
            lines.append(f"  {k:20s} {self.control.get(k, 0):6d} ({100 * self.control.get(k, 0) / max(1, self.programs):5.1f}%)")
        if self.text_checked:
            lines.append(f"forms read back from the emitted PTX text: {self.text_checked} programs agree with their IR")
        if self.first_seen:
            lines.append(f"last new form reached at program {max(self.first_seen.values())}")
        missing = self.missing_forms()
        if missing:
            lines.append(f"unreached forms ({len(missing)}): " + ", ".join(missing[:8]) + (" ..." if len(missing) > 8 else ""))
        return "\n".join(lines)


def program_features(p: Program) -> tuple[set[str], list[str], set[str]]:
    """(form keys, swizzle mode of each descriptor built, control-flow kinds) of one program."""
    keys: set[str] = set()
    swz: list[str] = []
    ctl: set[str] = set()
    for item in p.module.items:
        if isinstance(item, Function) and item.body is None:
            ctl.add("extern_decl")
    kernel = p.module.function(p.launch.kernel)
    body = [s for s in kernel.body or ()]
    labels = {s.name: i for i, s in enumerate(body) if isinstance(s, Label)}
    for i, s in enumerate(body):
        if not isinstance(s, Instr):
            continue
        form = isa.form_for(s)
        if form is not None:
            keys.add(form.key)
            if form.has_operand("scale_d"):
                k = [o.role for o in form.operands].index("scale_d")
                if k < len(s.operands) and isinstance(s.operands[k], Reg):
                    ctl.add("scale_d_predicate")
        if s.opcode == "wgmma.wait_group.sync.aligned" and s.operands and int(s.operands[0].value) > 0:
            ctl.add("wait_group_n>0")
        if s.opcode == "or.b64" and isinstance(s.operands[2], Imm) and int(s.operands[2].value) >> 16:
            swz.append(SWIZZLE_NAMES[descriptor_field(int(s.operands[2].value), SWIZZLE_FIELD)])
        if s.base == "bra":
            target = labels.get(str(s.operands[0]), len(body))
            if s.opcode == "bra.uni":
                ctl.add("loop" if target < i else "uniform_branch")
            elif s.guard is not None:
                ctl.add("divergent_branch")
        elif s.guard is not None and s.base not in ("exit", "ret"):
            ctl.add("predicated")
        if s.base == "call":
            ctl.add("call_indirect" if isinstance(s.operands[1], Reg) else "call")
        if s.base == "exit":
            ctl.add("early_exit")
    if p.launch.threads > 128:
        ctl.add("multi_warpgroup")
    if not ctl - {"extern_decl"}:
        ctl.add("straight")
    return keys, swz, ctl


def measure(progs) -> Coverage:
    cov = Coverage()
    for p in progs:
        cov.add(p)
    return cov


def draw(n: int, strategy=None, seed: int | None = None, check_text_every: int = 0) -> Coverage:
    """Draw ``n`` programs with Hypothesis (generation phase only, as ``fuzzptx run`` draws
    them) and measure them; every ``check_text_every``-th one also through its PTX text."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed


    cov = Coverage()

    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy if strategy is not None else programs())
    def run(p):
        cov.add(p, check_text=bool(check_text_every) and cov.programs % check_text_every == 0)

    if seed is not None:
        run = hseed(seed)(run)
    run()
    return cov


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzzptx.strategies.coverage",
                                 description="Draw N programs and report the share of forms, swizzles and control kinds reached.")
    ap.add_argument("-n", type=int, default=1000, help="programs to draw (default 1000)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--family", choices=("all", "wgmma", "warp"), default="all")
    ap.add_argument("--check-text", type=int, default=10, metavar="K",
                    help="also emit every K-th program as PTX, parse it back and check it has the same forms "
                         "(default 10; 0: never)")
    ap.add_argument("--json", metavar="PATH", help="also write the figures to PATH as JSON")
    args = ap.parse_args(argv)
    if args.n < 1:
        print("coverage: -n must be positive", file=sys.stderr)
        return 2

    strat = {"all": programs, "wgmma": wgmma_programs, "warp": warp_programs}[args.family]()
    t = time.perf_counter()
    cpu = time.process_time()
    cov = draw(args.n, strat, args.seed, args.check_text)
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    print(cov.report())
    print(f"time: {wall:.1f} s ({1000 * wall / args.n:.1f} ms/program wall, {1000 * cpu / args.n:.1f} ms/program CPU)")
    if args.json:
        out = dict(cov.summary(), command="python -m fuzzptx.strategies.coverage " + " ".join(argv or sys.argv[1:]),
                   seconds=round(wall, 1), cpu_ms_per_program=round(1000 * cpu / args.n, 2))
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
