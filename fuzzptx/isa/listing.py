"""The catalogue as rows a person or a script can read (``fuzzptx catalogue [--json]``)."""
from __future__ import annotations

import argparse
import json
from collections import Counter

from . import families
from . import forms as _forms
from .model import Form, OperandSpec


def _operand_text(op: OperandSpec) -> str:
    if op.kind == "vec":
        text = f"{op.role}:{{{op.count}x{op.reg_types[0]}}}"
    elif op.kind in ("imm", "pred_or_imm"):
        vals = ",".join(str(v) for v in op.values)
        text = f"{op.role}:{'pred|' if op.kind == 'pred_or_imm' else ''}{{{vals}}}"
    elif op.kind == "addr":
        text = f"{op.role}:[{'|'.join(op.spaces)}]"
    else:
        text = f"{op.role}:{op.reg_types[0] if op.reg_types else op.kind}"
    return text + ("?" if op.optional else "")


def row(form: Form) -> dict:
    """One form as JSON-able facts (operands with every accepted register type)."""
    return {
        "key": form.key,
        "family": form.family,
        "opcode": form.opcode,
        "shape": str(form.shape) if form.shape else None,
        "dtype": form.dtype, "atype": form.atype, "btype": form.btype, "ctype": form.ctype,
        "a_source": form.a_source,
        "satfinite": form.satfinite,
        "min_ptx": f"{form.min_ptx[0]}.{form.min_ptx[1]}",
        "target": form.target,
        "ptxas_accepts": form.ptxas_accepts,
        "ptxas_note": form.ptxas_note,
        "operands": [
            {"role": o.role, "kind": o.kind, "count": o.count, "reg_types": list(o.reg_types),
             "values": list(o.values), "io": o.io, "spaces": list(o.spaces), "optional": o.optional}
            for o in form.operands
        ],
        "attrs": {k: (list(v) if isinstance(v, tuple) else v) for k, v in form.attrs},
    }


def catalogue_rows(family: str | None = None) -> list[dict]:
    """Every form (or one family's) as a dict, in catalogue order."""
    return [row(f) for f in _forms(family)]


def catalogue_table(family: str | None = None) -> str:
    """A plain-text table: per-family counts, then one line per form."""
    fs = _forms(family)
    counts = Counter(f.family for f in fs)
    lines = [f"{len(fs)} forms: " + ", ".join(f"{k} {v}" for k, v in counts.items()), ""]
    width = max((len(f.key) for f in fs), default=10)
    lines.append(f"{'form':<{width}}  {'target':<8} {'ptx':<4} operands")
    for f in fs:
        ops = " ".join(_operand_text(o) for o in f.operands)
        flag = "" if f.ptxas_accepts else "  [ptxas rejects: spec-only]"
        lines.append(f"{f.key:<{width}}  {f.target:<8} {f.min_ptx[0]}.{f.min_ptx[1]:<2} {ops}{flag}")
    return "\n".join(lines) + "\n"


def main_catalogue(argv: list[str] | None = None) -> int:
    """``fuzzptx catalogue [--json] [--family F]``."""
    ap = argparse.ArgumentParser(prog="fuzzptx catalogue", description="list the ISA catalogue")
    ap.add_argument("--json", action="store_true", help="one JSON object per form, as a list")
    ap.add_argument("--family", choices=families(), help="only this family")
    args = ap.parse_args(argv)
    if args.json:
        print(json.dumps(catalogue_rows(args.family), indent=1))
    else:
        print(catalogue_table(args.family), end="")
    return 0
