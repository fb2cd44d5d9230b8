"""The errors ptxas 13.0.88 is predicted to print (the module is then rejected, nothing else printed).

ISA-layer findings become errors at their lines, except what ptxas accepts although the spec
forbids it (a missing ``.aligned``; ``wait_group N`` with N > 7; measured, see
``tests/data/checker/isa_*.ptx``); calls to undefined extern functions fail to resolve, and their
address cannot be taken (``mov.u64 %rd, ext;``: no line).
"""
from __future__ import annotations

from fuzzptx import isa
from fuzzptx.ptx.ir import Instr, Module, Reg, Sym

from .findings import Finding, PredictedDiag, Sink, path_of
from .isa_rules import check_function as isa_check_function, check_module_header

# Extern functions ptxas resolves itself (device runtime); any other undefined callee is an error.
SYSTEM_FUNCTIONS = frozenset({"vprintf", "malloc", "free", "__assertfail", "cudaGetParameterBufferV2",
                              "cudaLaunchDeviceV2", "cudaGetParameterBuffer", "cudaLaunchDevice"})


def _callee(ins: Instr):
    """The called function of a ``call``: a symbol, or a register for an indirect call."""
    for op in ins.operands:
        if isinstance(op, (Sym, Reg)):
            return op
    return None


def _ptxas_rejects(f: Finding) -> bool:
    if f.rule.endswith(".qualifier") and "missing .aligned" in f.message and "unexpected" not in f.message:
        return False
    if f.rule == "isa.imm.n":  # wgmma.wait_group N > 7: ptxas takes any constant
        return False
    return True


def predict_errors(module: Module, isa_findings: dict | None = None) -> list[PredictedDiag]:
    """ptxas errors predicted from the ISA layer (``isa_findings``: function name -> findings, if known)."""
    out: list[PredictedDiag] = []
    path = path_of(module)
    if isa_findings is not None and "" in isa_findings:
        head = isa_findings[""]
    else:
        sink = Sink(path, None, "isa")
        check_module_header(module, sink)
        head = sink.items
    out += [PredictedDiag(None, f.line, "error", None, f.message) for f in head]
    defined = {f.name for f in module.functions() if f.body is not None}
    externs = {f.name for f in module.functions()
               if f.body is None and f.name not in defined and f.name not in SYSTEM_FUNCTIONS}
    for fn in module.functions():
        if fn.body is None:
            continue
        if isa_findings is not None and fn.name in isa_findings:
            items = isa_findings[fn.name]
        else:
            sink = Sink(path, fn.name, "isa")
            isa_check_function(module, fn, sink)
            items = sink.items
        for f in items:
            if _ptxas_rejects(f):
                out.append(PredictedDiag(None, f.line, "error", fn.name, f.message))
        for ins in fn.instructions():
            if ins.base == "mov" and any(isinstance(o, Sym) and o.name in externs for o in ins.operands[1:]):
                name = next(o.name for o in ins.operands[1:] if isinstance(o, Sym) and o.name in externs)
                out.append(PredictedDiag(None, None, "error", fn.name, f"Cannot take address of function '{name}'"))
            if ins.base == "call":
                callee = _callee(ins)
                if isinstance(callee, Sym) and callee.name in externs:
                    out.append(PredictedDiag(None, None, "error", callee.name,
                                             f"Unresolved extern function '{callee.name}'"))
            form = isa.form_for(ins) if ins.base in ("wgmma", "mma", "wmma", "ldmatrix", "stmatrix") else None
            if form is not None and not form.ptxas_accepts:
                out.append(PredictedDiag(None, ins.loc.line if ins.loc else None, "error", fn.name,
                                         form.ptxas_note or "ptxas rejects this form"))
    return out
