"""The smallest kernel that exercises one catalogue form.

``minimal_kernel(form)`` declares every register the form's operands need (canonical
register type), initialises inputs, descriptors and addresses (a ``.shared`` array
backs descriptors and ldmatrix/wmma addresses), brackets ``wgmma.mma_async`` with
fence / commit_group / wait_group 0, and stores an output register to the global
``out`` parameter so ptxas cannot drop the instruction as dead.  The conformance
suite compiles one per form; strategies reuse it for single-instruction programs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from fuzzptx.isa.layouts import MatrixDescriptor
from fuzzptx.isa.model import Form, OperandSpec
from fuzzptx.isa.warp import target_rank
from fuzzptx.ptx.ir import Addr, Function, Imm, Instr, Module, Param, Reg, RegDecl, Statement, Sym, VarDecl, Vec

# The PTX ISA version each target first appears in (ptxas: "PTX .version X does not
# support .target Y").  ptxas 13 no longer builds sm_70/sm_72, so sm_75 is the floor.
TARGET_MIN_PTX: dict[str, tuple[int, int]] = {
    "sm_70": (6, 0), "sm_72": (6, 1), "sm_75": (6, 3), "sm_80": (7, 0), "sm_86": (7, 1),
    "sm_87": (7, 4), "sm_89": (7, 8), "sm_90": (7, 8), "sm_90a": (8, 0), "sm_100a": (8, 6),
    "sm_120a": (8, 7),
}
OLDEST_TARGET = "sm_75"
DEFAULT_TARGET = "sm_90a"
SMEM = "smem"
# Large enough for every tile a descriptor with LBO 128 / SBO 256 can span
# ((256/8 - 1) * 256 + 4 * 128 = 8448 bytes for N = 256), so no form reads past it.
SMEM_BYTES = 16384
OUT_PARAM = "out"
# Descriptor fields besides the start address: LBO = 128 B, SBO = 256 B (FACTS.md layout).
DESC_LBO_SBO = MatrixDescriptor(start=0, lbo=128, sbo=256).encode()
SP_META = 0x44444444  # 2:4 metadata, indices (0, 1) in every nibble: defined for every shape
STRIDE = 128  # wmma stride in elements: at least every default stride (seed 002)


def version_text(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def build_target(form: Form) -> str:
    """The target ptxas 13 can build closest to ``form.target`` (sm_70/72 forms build for sm_75)."""
    return form.target if target_rank(form.target) >= target_rank(OLDEST_TARGET) else OLDEST_TARGET


def default_target(form: Form) -> str:
    """sm_90a, or the form's own target where that is newer (sm_100a)."""
    return form.target if target_rank(form.target) > target_rank(DEFAULT_TARGET) else DEFAULT_TARGET


def default_version(form: Form, target: str) -> tuple[int, int]:
    return max(form.min_ptx, TARGET_MIN_PTX.get(target, (8, 0)))


def default_immediate(op: OperandSpec) -> int:
    """Accumulate (scale-d 1), no negation (1), no transpose (0), selector 0, wait 0."""
    if op.role == "scale_d":
        return 1
    for v in (0, 1):
        if v in op.values:
            return v
    return op.values[0]


def merged_name(rtype: str, name: str, count: int | None = None, vector: str = "") -> str:
    """A declared register's name once kernels are merged: its declaration's type, vector
    width and count in front (``%d`` of ``.reg .f32 %d<64>`` becomes ``%f32x64_d``), so
    sections with the same declaration share registers (``strategies.instructions``)."""
    return "%" + rtype.lstrip(".") + vector.lstrip(".") + (f"x{count}" if count else "") + "_" + name[1:]


@dataclass
class _Parts:
    """What the operands need, gathered while walking them (internal, mutable)."""

    decls: list = field(default_factory=list)
    init: list = field(default_factory=list)
    operands: list = field(default_factory=list)
    out: tuple[str, Reg] | None = None  # (register type, register) to store
    smem: bool = False
    merged: bool = False  # registers named by ``merged_name``

    def name(self, rtype: str, name: str, count: int | None = None) -> str:
        return merged_name(rtype, name, count) if self.merged else name

    def out_p(self) -> Reg:
        return Reg(self.name(".b64", "%out_p"))

    def out_g(self) -> Reg:
        return Reg(self.name(".b64", "%out_g"))

    def smem_addr(self) -> Reg:
        return Reg(self.name(".b32", "%smem_addr"))


def _reg_width(t: str) -> int:
    return 64 if t in (".b64", ".u64", ".s64", ".f64") else 32


_ZERO = Imm(0, "0")


def _zero(t: str, reg: Reg) -> Instr:
    return Instr(f"mov.b{_reg_width(t)}", (reg, _ZERO))


def _store_type(t: str) -> str:
    return {".f32": ".f32", ".f64": ".f64", ".s32": ".s32", ".u32": ".u32"}.get(t, f".b{_reg_width(t)}")


def _operand(op: OperandSpec, form: Form, *, scale_d_pred: bool, immediates: dict[str, int], p: _Parts) -> None:
    name = "%" + op.role
    if op.kind == "vec":
        t = op.reg_types[0]
        name = p.name(t, name, op.count)
        p.decls.append(RegDecl(t, (name,), count=op.count))
        regs = tuple(Reg(f"{name}{i}") for i in range(op.count))
        if op.io in ("in", "inout"):
            p.init.extend(_zero(t, r) for r in regs)
        if op.io in ("out", "inout") and p.out is None:
            p.out = (t, regs[0])
        p.operands.append(Vec(regs))
    elif op.kind == "reg":
        t = op.reg_types[0]
        name = p.name(t, name)
        p.decls.append(RegDecl(t, (name,)))
        reg = Reg(name)
        if op.role.endswith("desc"):
            p.init += [Instr("cvt.u64.u32", (reg, p.smem_addr())), Instr("shr.u64", (reg, reg, Imm.of(4))),
                       Instr("and.b64", (reg, reg, Imm.of(0x3FFF))),
                       Instr("or.b64", (reg, reg, Imm.of(DESC_LBO_SBO)))]
            p.smem = True
        elif op.role == "sp_meta":
            p.init.append(Instr(f"mov.b{_reg_width(t)}", (reg, Imm(SP_META, hex(SP_META)))))
        elif op.role == "stride":
            p.init.append(Instr(f"mov.b{_reg_width(t)}", (reg, Imm.of(STRIDE))))
        else:
            p.init.append(_zero(t, reg))
        p.operands.append(reg)
    elif op.kind == "pred_or_imm":
        value = immediates.get(op.role, default_immediate(op))
        if scale_d_pred:
            reg = Reg(p.name(".pred", "%" + op.role))
            p.decls.append(RegDecl(".pred", (reg.name,)))
            p.init.append(Instr("setp.ne.b32", (reg, p.smem_addr(), Imm.of(-1))))
            p.smem = True
            p.operands.append(reg)
        else:
            p.operands.append(Imm.of(value))
    elif op.kind == "imm":
        p.operands.append(Imm.of(immediates.get(op.role, default_immediate(op))))
    elif op.kind == "addr":
        reg = Reg(p.name(op.reg_types[0], name))
        p.decls.append(RegDecl(op.reg_types[0], (reg.name,)))
        space = _space_of(form)
        if space in ("shared", "shared::cta", "generic_shared"):
            p.init.append(Instr("mov.u64", (reg, Sym(SMEM))))
            if space == "generic_shared":
                p.init.append(Instr("cvta.shared.u64", (reg, reg)))
            p.smem = True
        elif space == "global":
            p.init.append(Instr("mov.b64", (reg, p.out_g())))
        else:  # generic: the out pointer as given (points to global)
            p.init.append(Instr("mov.b64", (reg, p.out_p())))
        p.operands.append(Addr(reg))
    else:
        raise ValueError(f"{form.key}: unknown operand kind {op.kind!r}")


def _space_of(form: Form) -> str:
    """Where the address points: the form's state space; without one, a generic address
    (into shared memory for ldmatrix/stmatrix, to the global ``out`` buffer for wmma)."""
    space = str(form.attr("space", "") or "")
    if space:
        return space
    return "generic_shared" if form.family in ("ldmatrix", "stmatrix") else "generic"


def minimal_kernel(form: Form, *, name: str = "k", target: str | None = None,
                   version: tuple[int, int] | str | None = None, scale_d_pred: bool = False,
                   immediates: dict[str, int] | None = None, include_optional: bool = False,
                   merged_names: bool = False) -> Module:
    """A one-kernel module that exercises ``form``.

    target: defaults to ``default_target(form)``; version: to the larger of
    ``form.min_ptx`` and the target's first PTX version.  scale_d_pred: pass
    wgmma's scale-d as a ``.pred`` register instead of the immediate.  immediates:
    role -> value for immediate operands (defaults: ``default_immediate``).
    include_optional: also pass optional trailing operands (wmma's stride).
    merged_names: name every register by ``merged_name``, as merging kernels renames them
    (strategies build their sections this way: no renaming pass).
    """
    target = target or default_target(form)
    if version is None:
        version = default_version(form, target)
    vtext = version if isinstance(version, str) else version_text(version)
    p = _Parts(merged=merged_names)
    p.decls.append(RegDecl(".b64", (p.out_p().name, p.out_g().name)))
    imms = dict(immediates or {})
    for op in form.operands:
        if op.optional and not include_optional:
            continue
        _operand(op, form, scale_d_pred=scale_d_pred, immediates=imms, p=p)
    body: list[Statement] = list(p.decls)
    if p.smem:
        body.append(RegDecl(".b32", (p.smem_addr().name,)))
    body += [Instr("ld.param.u64", (p.out_p(), Addr(Sym(OUT_PARAM)))),
             Instr("cvta.to.global.u64", (p.out_g(), p.out_p()))]
    if p.smem:
        body.append(Instr("mov.u32", (p.smem_addr(), Sym(SMEM))))
    body += p.init
    instr = Instr(form.opcode, tuple(p.operands))
    if form.family in ("wgmma", "wgmma.sp"):
        body += [Instr("wgmma.fence.sync.aligned"), instr, Instr("wgmma.commit_group.sync.aligned"),
                 Instr("wgmma.wait_group.sync.aligned", (Imm.of(0),))]
    else:
        body.append(instr)
    if p.out is not None:
        t, reg = p.out
        body.append(Instr(f"st.global{_store_type(t)}", (Addr(p.out_g()), reg)))
    body.append(Instr("ret"))
    items: list = []
    if p.smem:
        items.append(VarDecl(".shared", ".b8", SMEM, align=1024, dims=(SMEM_BYTES,)))
    items.append(Function("entry", name, params=(Param(".param", ".u64", OUT_PARAM),), body=tuple(body),
                          linkage=".visible"))
    return Module(version=vtext, target=target, items=tuple(items))

