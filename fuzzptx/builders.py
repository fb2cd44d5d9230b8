"""Deterministic construction of runnable programs (IR + launch + buffers).

``KernelBuilder`` is the low-level kit the strategies compose on (keep its API
stable): fresh registers, buffers passed as ``.u64`` params, shared arrays,
straight-line copies global -> shared, matrix descriptors in registers, per-thread
fragments.  ``wgmma_program`` builds one complete single-CTA wgmma test kernel
for any dense catalogue form, ``tile_plan`` the canonical shared-memory tiles it
uses, ``wgmma_variants`` the variant axes a form allows.

Instruction subset the builder emits (what the reference interpreter must run):
``mov.u32 r, %tid.x`` / ``mov.u32 r, <shared symbol>``, ``ld.param.u64``/``.u32``,
``cvta.to.global.u64``, ``mul.wide.u32``, ``add.u64``, ``add.u32``, ``mad.lo.u32``,
``cvt.u64.u32``, ``shr.u64``, ``and.b64``, ``or.b64``, ``setp.ne.u32``,
``setp.lt.u32`` (guarded tails), ``ld.global.b32`` / ``.f32`` / ``.s32``,
``st.global.*`` (same types), ``ld.shared``/``st.shared.b32``,
``fence.proxy.async.shared::cta``, ``bar.sync 0``, ``wgmma.fence/commit_group/wait_group``,
``wgmma.mma_async``, ``ret``.  Addresses are ``[reg]`` or ``[reg+imm]``.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

from fuzzptx import isa
from fuzzptx.data import element_bytes
from fuzzptx.isa import ELEMENT_BITS
from fuzzptx.isa.layouts import K_STEP_BYTES, PATTERN_LINES, ROW_BYTES, SWIZZLE_MODES, MatrixDescriptor, SmemLayout
from fuzzptx.isa.wgmma import d_register_count
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.ir import (
    Addr,
    Directive,
    Function,
    Guard,
    Imm,
    Instr,
    Label,
    Module,
    Operand,
    Param,
    Reg,
    RegDecl,
    Statement,
    Sym,
    VarDecl,
    Vec,
)

# Register name stems per type: deterministic, short, readable in repro files.
_STEMS = {
    ".pred": "%p", ".b16": "%h", ".b32": "%r", ".u32": "%ru", ".s32": "%rs", ".f32": "%f",
    ".b64": "%rd", ".u64": "%ud", ".s64": "%sd", ".f64": "%fd", ".f16x2": "%hh", ".f16": "%hf",
    ".bf16": "%hb", ".u16": "%hu", ".s16": "%hs", ".b8": "%c", ".u8": "%cu", ".s8": "%cs",
}
# ld/st opcode type for a register type (sub-word float pairs move as raw bits).
_MOVE_TYPE = {".f16x2": ".b32", ".bf16x2": ".b32"}


def _stem(rtype: str) -> str:
    return _STEMS.get(rtype, "%" + rtype.lstrip(".").replace("x", "v"))


_IR_OPERANDS = frozenset((Reg, Imm, Addr, Vec, Sym))  # taken as they are (most operands: no conversion)


def _operand(x: Operand | int | float | str) -> Operand:
    """Accept IR operands, Python numbers (immediates) and names (``%r`` register, else symbol)."""
    if isinstance(x, (int, float)):
        return Imm.of(x)
    if isinstance(x, str):
        return Reg(x) if x.startswith("%") else Sym(x)
    return x


@dataclass(frozen=True)
class SharedArray:
    name: str
    nbytes: int
    align: int


class KernelBuilder:
    """Builds one ``.entry`` kernel statement by statement, then a ``Program``.

    Everything is deterministic: register and symbol names are numbered in
    creation order, so the same calls give the same PTX text.

    ``reg``/``regs`` make fresh registers (declared at ``build`` time, one
    ``.reg .T %stem<n>;`` per type).  ``buffer`` adds a ``.u64`` kernel parameter
    plus the ``Buffer`` the header describes and returns the *global* pointer in a
    ``.b64`` register.  ``emit`` appends any instruction (ints become immediates,
    ``"%x"`` strings registers, other strings symbols).  ``build`` appends ``ret``.
    """

    def __init__(self, name: str = "k", threads: int = 128, version: str = "8.0", target: str = "sm_90a"):
        self.name = name
        self.threads = threads
        self.version = version
        self.target = target
        self._counts: dict[str, int] = defaultdict(int)
        self._order: list[str] = []  # register types in first-use order
        self._body: list[Statement] = []
        self._params: list[Param] = []
        self._buffers: list[Buffer] = []
        self._scalars: list[tuple[str, int]] = []
        self._shared: list[SharedArray] = []
        self._labels = 0
        self._tid: Reg | None = None

    # ---------------------------------------------------------------- registers

    def reg(self, rtype: str) -> Reg:
        """A fresh register of PTX type ``rtype`` (e.g. ``".b32"``, ``".pred"``)."""
        if rtype not in self._counts:
            self._order.append(rtype)
        i = self._counts[rtype]
        self._counts[rtype] = i + 1
        return Reg(f"{_stem(rtype)}{i}")

    def regs(self, rtype: str, n: int) -> tuple[Reg, ...]:
        return tuple(self.reg(rtype) for _ in range(n))

    # ---------------------------------------------------------------- statements

    def emit(self, opcode: str, *operands: Operand | int | float | str, guard: Guard | Reg | None = None) -> None:
        """Append one instruction; a bare ``Reg`` guard means ``@reg``."""
        if isinstance(guard, Reg):
            guard = Guard(guard)
        self._body.append(Instr(opcode, tuple([o if type(o) in _IR_OPERANDS else _operand(o) for o in operands]), guard))

    def directive(self, text: str) -> None:
        """Append a directive kept as text (``.pragma "nounroll";``, ``.loc ...``)."""
        self._body.append(Directive(text))

    def new_label(self) -> str:
        self._labels += 1
        return f"L{self._labels}"

    def place(self, label: str) -> None:
        self._body.append(Label(label))

    def tid(self) -> Reg:
        """``%tid.x`` in a ``.b32`` register (read once, reused)."""
        if self._tid is None:
            self._tid = self.reg(".b32")
            self.emit("mov.u32", self._tid, Reg("%tid.x"))
        return self._tid

    # ---------------------------------------------------------------- params, buffers, shared

    def buffer(self, name: str, type: str, count: int, init: str = "random", seed: int = 0,
               output: bool = False) -> Reg:
        """A global buffer passed as ``.param .u64 name``; returns its global address (``.b64``)."""
        self._params.append(Param(".param", ".u64", name))
        self._buffers.append(Buffer(name, type, count, init, seed, output))
        ptr = self.reg(".b64")
        self.emit("ld.param.u64", ptr, Addr(Sym(name)))
        self.emit("cvta.to.global.u64", ptr, ptr)
        return ptr

    def scalar(self, name: str, value: int, type: str = ".u32") -> Reg:
        """A scalar kernel parameter (header ``PARAM`` line) loaded into a register."""
        self._params.append(Param(".param", type, name))
        self._scalars.append((name, int(value)))
        r = self.reg(".b64" if type.endswith("64") else ".b32")
        self.emit(f"ld.param{type}", r, Addr(Sym(name)))
        return r

    def shared(self, nbytes: int, align: int = 1024) -> str:
        """A ``.shared .align A .b8 sN[nbytes]`` array; returns its symbol."""
        name = f"smem{len(self._shared)}"
        self._shared.append(SharedArray(name, nbytes, align))
        return name

    def shared_address(self, symbol: str, offset: int = 0) -> Reg:
        """The 32-bit shared-window address of ``symbol + offset`` in a ``.b32`` register."""
        r = self.reg(".b32")
        self.emit("mov.u32", r, Sym(symbol))
        if offset:
            self.emit("add.u32", r, r, offset)
        return r

    def thread_address(self, ptr: Reg, stride_bytes: int) -> Reg:
        """``ptr + tid * stride_bytes`` (64-bit global address)."""
        off = self.reg(".b64")
        self.emit("mul.wide.u32", off, self.tid(), stride_bytes)
        addr = self.reg(".b64")
        self.emit("add.u64", addr, ptr, off)
        return addr

    def copy_to_shared(self, src_ptr: Reg, smem_symbol: str, nbytes: int, *, offset: int = 0,
                       sync: bool = True) -> None:
        """Copy ``nbytes`` (a multiple of 4) from global ``src_ptr`` to ``smem_symbol + offset``.

        Thread t moves words t, t+T, t+2T, ... (straight-line code; a guarded tail when
        the word count is not a multiple of T).  With ``sync``: each thread then runs
        ``fence.proxy.async.shared::cta`` (generic-proxy writes read next by wgmma's
        async proxy need it: FACTS.md) and the CTA meets at ``bar.sync 0``.
        """
        if nbytes % 4:
            raise ValueError(f"copy_to_shared: {nbytes} bytes is not a multiple of 4")
        words, T = nbytes // 4, self.threads
        g = self.thread_address(src_ptr, 4)
        s = self.reg(".b32")
        base = self.shared_address(smem_symbol, offset)
        self.emit("mad.lo.u32", s, self.tid(), 4, base)
        full, tail = divmod(words, T)
        for j in range(full):
            x = self.reg(".b32")
            self.emit("ld.global.b32", x, Addr(g, 4 * T * j))
            self.emit("st.shared.b32", Addr(s, 4 * T * j), x)
        if tail:
            p = self.reg(".pred")
            self.emit("setp.lt.u32", p, self.tid(), tail)
            x = self.reg(".b32")
            self.emit("ld.global.b32", x, Addr(g, 4 * T * full), guard=p)
            self.emit("st.shared.b32", Addr(s, 4 * T * full), x, guard=p)
        if sync:
            self.sync_shared()

    def sync_shared(self) -> None:
        """Make this CTA's generic-proxy shared writes visible to wgmma: proxy fence + barrier."""
        self.emit("fence.proxy.async.shared::cta")
        self.emit("bar.sync", 0)

    def descriptor(self, smem_symbol: str, offset: int, desc) -> Reg:
        """A ``.b64`` wgmma matrix descriptor for ``smem_symbol + offset``.

        ``desc`` is an ``fuzzptx.isa.layouts.MatrixDescriptor`` whose start
        field is ignored: the start comes from the symbol's shared address (bits 0-13 =
        (addr & 0x3FFFF) >> 4); every other field is OR-ed in as one constant.
        """
        const = _encode_fields(desc)
        a32 = self.shared_address(smem_symbol, offset)
        d = self.reg(".b64")
        self.emit("cvt.u64.u32", d, a32)
        self.emit("shr.u64", d, d, 4)
        self.emit("and.b64", d, d, 0x3FFF)
        if const:
            self.emit("or.b64", d, d, Imm(const, hex(const)))
        return d

    # ---------------------------------------------------------------- fragments

    def load_fragment(self, ptr: Reg, reg_type: str, n: int) -> tuple[Reg, ...]:
        """Thread t loads n 32-bit words at ``ptr + (t*n + i)*4`` into fresh ``reg_type`` registers."""
        regs = self.regs(reg_type, n)
        addr = self.thread_address(ptr, 4 * n)
        mt = _MOVE_TYPE.get(reg_type, reg_type)
        for i, r in enumerate(regs):
            self.emit(f"ld.global{mt}", r, Addr(addr, 4 * i))
        return regs

    def store_fragment(self, ptr: Reg, regs: tuple[Reg, ...], reg_type: str = ".b32") -> None:
        """Thread t stores its registers at ``ptr + (t*n + i)*4`` (n = len(regs))."""
        addr = self.thread_address(ptr, 4 * len(regs))
        mt = _MOVE_TYPE.get(reg_type, reg_type)
        for i, r in enumerate(regs):
            self.emit(f"st.global{mt}", Addr(addr, 4 * i), r)

    # ---------------------------------------------------------------- build

    def function(self) -> Function:
        decls: list[Statement] = [RegDecl(t, (_stem(t),), count=self._counts[t]) for t in self._order]
        decls += [VarDecl(".shared", ".b8", s.name, align=s.align, dims=(s.nbytes,)) for s in self._shared]
        body = list(self._body)
        if not body or not (isinstance(body[-1], Instr) and body[-1].opcode in ("ret", "exit")):
            body.append(Instr("ret"))
        return Function("entry", self.name, tuple(self._params), body=tuple(decls + body), linkage=".visible")

    def build(self, expect: tuple[tuple[str, str], ...] = (), signature: str | None = None,
              notes: tuple[str, ...] = ()) -> Program:
        module = Module(self.version, self.target, 64, (self.function(),))
        return Program(module, Launch(self.name, (1, 1, 1), (self.threads, 1, 1)), tuple(self._buffers),
                       tuple(self._scalars), tuple(expect), signature, tuple(notes))


def _encode_fields(desc) -> int:
    """The descriptor's 64-bit value with a zero start address (the kernel ORs the start in)."""
    return int(replace(desc, start=0).encode())


# ==================================================================== wgmma test kernels



@dataclass(frozen=True)
class TilePlan:
    """How a (mn x k_steps*K) operand tile sits in one shared array.

    ``layouts[s]`` is the canonical layout (``fuzzptx.isa.layouts.SmemLayout``,
    start = byte offset inside the array) that k-step s's descriptor describes;
    ``nbytes`` covers every byte any step reads (a multiple of 16).
    """

    major: str
    swizzle: str
    nbytes: int
    layouts: tuple  # tuple[SmemLayout, ...]


def tile_plan(mn: int, element_bits: int, k_steps: int, major: str = "K", swizzle: str = "none",
              start_line: int = 0, base_offset: int | None = None) -> TilePlan:
    """Choose LBO/SBO and per-step starts for a canonical tile (CuTe's atom tiling, MN first).

    K-major none: core matrices 8 rows x 16 B; both 16-byte K chunks of all steps
      adjacent (LBO = 128), 8-row groups after them (SBO = 128 * 2 * k_steps).
    K-major swizzled (row W bytes): SBO = 8W, LBO unused (16); a step's 32 bytes of K
      sit at byte 32s of the atom row; K past W bytes goes to the next atom column,
      placed after all mn/8 row groups.
    MN-major none: core matrix 8 k-rows x 16 B of MN; k groups adjacent (LBO = 128),
      16-byte MN chunks after them (SBO = 128 * k_groups).
    MN-major swizzled: atoms of W bytes of MN x 8 k-rows; MN atoms adjacent (LBO = 8W),
      8-row k groups after them (SBO = 8W * mn_atoms).
    ``start_line`` j places the tile j 128-byte lines past the array's (1024-aligned) start, so a
    swizzle pattern starts off its repeat boundary; ``base_offset`` None means the spec's
    formula ``(pattern start >> 7) & 7`` (0 when aligned), an int forces a value.
    """
    if swizzle == "none" and (start_line or base_offset):
        raise ValueError("start_line/base_offset apply to swizzled layouts only")
    if not 0 <= start_line < PATTERN_LINES[swizzle] and swizzle != "none":
        raise ValueError(f"start_line must be in 0..{PATTERN_LINES[swizzle] - 1} for {swizzle}")
    shift = 128 * start_line
    if base_offset is None:
        base_offset = (shift >> 7) & 7
    W = ROW_BYTES[swizzle]
    mn_bytes = mn * element_bits // 8
    k_elems = K_STEP_BYTES * 8 // element_bits  # K of one instruction
    lays = []
    if major == "K":
        if swizzle == "none":
            lbo, sbo = 128, 128 * 2 * k_steps
            starts = [256 * s for s in range(k_steps)]
            nbytes = (mn // 8) * sbo
        else:
            lbo, sbo = 16, 8 * W
            column = (mn // 8) * sbo  # one atom column: all row groups, W bytes of K each
            starts = [(K_STEP_BYTES * s // W) * column + (K_STEP_BYTES * s) % W for s in range(k_steps)]
            nbytes = -(-K_STEP_BYTES * k_steps // W) * column
    elif major == "MN":
        k_groups = k_steps * k_elems // 8
        if swizzle == "none":
            lbo, sbo = 128, 128 * k_groups
            starts = [128 * (k_elems // 8) * s for s in range(k_steps)]
            nbytes = -(-mn_bytes // 16) * sbo
        else:
            atoms = -(-mn_bytes // W)
            lbo, sbo = 8 * W, 8 * W * atoms
            starts = [sbo * (k_elems // 8) * s for s in range(k_steps)]
            nbytes = k_groups * sbo
    else:
        raise ValueError(f"major must be 'K' or 'MN', not {major!r}")
    for st in starts:
        lays.append(SmemLayout(major, swizzle, element_bits, lbo, sbo, st + shift, base_offset))
    return TilePlan(major, swizzle, nbytes + shift, tuple(lays))


# Buffer element types for each operand type (b1 images are raw bits).
_BUFFER_TYPE = {"b1": "b32"}
_D_REG = {"f32": ".f32", "s32": ".s32", "f16": ".b32"}


def _form(form):
    return isa.by_key(form) if isinstance(form, str) else form


def wgmma_variants(form) -> dict[str, tuple]:
    """The variant choices a form allows (the axes a covering array ranges over)."""
    f = _form(form)
    trans = f.has_operand("imm_trans_b")
    neg = f.has_operand("imm_scale_a")
    desc_a = f.a_source == "desc"
    return {
        "a_swizzle": SWIZZLE_MODES if desc_a else ("none",),
        "b_swizzle": SWIZZLE_MODES,
        "a_major": ("K", "MN") if desc_a and trans else ("K",),
        "b_major": ("K", "MN") if trans else ("K",),
        "scale_d": (True, False, "pred"),
        "scale_a": (1, -1) if neg else (1,),
        "scale_b": (1, -1) if neg else (1,),
    }


def wgmma_program(form, *, a_swizzle: str = "none", b_swizzle: str = "none", a_major: str = "K",
                  b_major: str = "K", scale_d: bool | str = True, pred_value: bool = False,
                  scale_a: int = 1, scale_b: int = 1, init: str = "random", seed: int = 0,
                  k_steps: int = 1, name: str = "k", a_start_line: int = 0, b_start_line: int = 0,
                  a_base_offset: int | None = None, b_base_offset: int | None = None) -> Program:
    """One single-CTA kernel running ``k_steps`` chained wgmma of ``form`` (a Form or its key).

    Buffers: ``a`` (A fragments, 4 words per thread per step, or A's shared image),
    ``b`` (B's shared image), ``c`` (initial accumulators, one fragment per thread),
    ``d`` (output: the accumulators after the last step).  Shared images are plain
    random elements filling ``tile_plan(...).nbytes``; the kernel copies them byte for
    byte, so what they *mean* is decided by the descriptor and layout alone.
    ``scale_d`` applies to the first step (True/False immediates, or ``"pred"``: a
    predicate set from the scalar param ``sd`` = ``pred_value``); later steps accumulate.
    ``a_major``/``b_major`` ``"MN"`` sets imm-trans 1 (only where the form has it).
    ``*_start_line``/``*_base_offset``: see ``tile_plan`` (swizzle patterns off their boundary).
    """
    f = _form(form)
    allowed = wgmma_variants(f)
    for key, val in (("a_swizzle", a_swizzle), ("b_swizzle", b_swizzle), ("a_major", a_major),
                     ("b_major", b_major), ("scale_a", scale_a), ("scale_b", scale_b)):
        if val not in allowed[key]:
            raise ValueError(f"{f.key}: {key}={val!r} not allowed (allowed: {allowed[key]})")
    if scale_d not in allowed["scale_d"]:
        raise ValueError(f"scale_d must be True, False or 'pred', not {scale_d!r}")
    kb = KernelBuilder(name, 128, "%d.%d" % max(f.min_ptx, (8, 0)), f.target)
    kb.tid()  # %tid.x first: a fixed, readable prologue
    abuf, bbuf = _BUFFER_TYPE.get(f.atype, f.atype), _BUFFER_TYPE.get(f.btype, f.btype)
    nd = d_register_count(f.dtype, f.shape.n)
    d_elems = 128 * nd * (2 if f.dtype == "f16" else 1)
    b_plan = tile_plan(f.shape.n, ELEMENT_BITS[f.btype], k_steps, b_major, b_swizzle, b_start_line, b_base_offset)
    a_plan = None
    if f.a_source == "desc":
        a_plan = tile_plan(64, ELEMENT_BITS[f.atype], k_steps, a_major, a_swizzle, a_start_line, a_base_offset)
        pa = kb.buffer("a", abuf, a_plan.nbytes * 8 // _bits(abuf), init, seed)
    else:
        pa = kb.buffer("a", abuf, 128 * 4 * k_steps * 32 // _bits(abuf), init, seed)
    pb = kb.buffer("b", bbuf, b_plan.nbytes * 8 // _bits(bbuf), init, seed + 1)
    pc = kb.buffer("c", f.dtype, d_elems, init, seed + 2)
    pd = kb.buffer("d", f.dtype, d_elems, "zeros", 0, output=True)
    first_scale_d: Operand = Imm.of(int(bool(scale_d)))
    if scale_d == "pred":
        flag = kb.scalar("sd", int(bool(pred_value)))
        first_scale_d = kb.reg(".pred")
        kb.emit("setp.ne.u32", first_scale_d, flag, 0)
    sb = kb.shared(b_plan.nbytes)
    kb.copy_to_shared(pb, sb, b_plan.nbytes, sync=a_plan is None)
    if a_plan is not None:
        sa = kb.shared(a_plan.nbytes)
        kb.copy_to_shared(pa, sa, a_plan.nbytes)
        a_ops: list[Operand] = [kb.descriptor(sa, lay.start, _desc_of(lay)) for lay in a_plan.layouts]
    else:
        words = kb.load_fragment(pa, ".b32", 4 * k_steps)
        a_ops = [Vec(words[4 * s: 4 * s + 4]) for s in range(k_steps)]
    b_ops = [kb.descriptor(sb, lay.start, _desc_of(lay)) for lay in b_plan.layouts]
    d = kb.load_fragment(pc, _D_REG[f.dtype], nd)
    kb.emit("wgmma.fence.sync.aligned")
    for s in range(k_steps):
        values = {"d": Vec(d), "a": a_ops[s], "a_desc": a_ops[s], "b_desc": b_ops[s],
                  "scale_d": first_scale_d if s == 0 else Imm.of(1),
                  "imm_scale_a": Imm.of(scale_a), "imm_scale_b": Imm.of(scale_b),
                  "imm_trans_a": Imm.of(int(a_major == "MN")), "imm_trans_b": Imm.of(int(b_major == "MN"))}
        missing = [op.role for op in f.operands if op.role not in values]
        if missing:
            raise ValueError(f"{f.key}: operands {missing} are not dense wgmma operands")
        kb.emit(f.opcode, *(values[op.role] for op in f.operands))
    kb.emit("wgmma.commit_group.sync.aligned")
    kb.emit("wgmma.wait_group.sync.aligned", 0)
    kb.store_fragment(pd, d, _D_REG[f.dtype])
    note = (f"wgmma_program {f.key} a_swizzle={a_swizzle} b_swizzle={b_swizzle} a_major={a_major} "
            f"b_major={b_major} scale_d={scale_d}" + (f"({int(bool(pred_value))})" if scale_d == "pred" else "")
            + f" scale_a={scale_a} scale_b={scale_b} k_steps={k_steps}")
    for side, plan, line, bo in (("a", a_plan, a_start_line, a_base_offset), ("b", b_plan, b_start_line, b_base_offset)):
        if line or bo is not None:
            note += f" {side}_start_line={line} {side}_base_offset={plan.layouts[0].base_offset}"
    return kb.build(notes=(note,))


def _bits(buffer_type: str) -> int:
    return 8 * element_bytes(buffer_type)


def _desc_of(layout):
    """The descriptor (start 0: the kernel adds the shared address) for a planned layout."""
    return MatrixDescriptor(0, layout.lbo, layout.sbo, layout.base_offset, layout.swizzle)


def repeated_wgmma(program: Program, copies: int, commit_between: bool = False, first_zero: bool = False) -> Program:
    """``program`` (one ``wgmma_program``) with its wgmma issued ``copies`` times back to back: the
    same accumulators, A and B each time, so D = C + copies * A*B (the PTX ISA orders chained
    wgmmas of one shape on one accumulator).  ``commit_between``: a commit_group between copies;
    ``first_zero``: the program's wgmma has scale-d 0 and the copies accumulate (scale-d 1).
    ptxas 13.0.88 -O3 collapses such copies into one (benchmarks/probe_dup_wgmma.py)."""
    fn = program.module.function(program.launch.kernel)
    body = list(fn.body)
    i = next(k for k, s in enumerate(body) if isinstance(s, Instr) and s.opcode.startswith("wgmma.mma_async"))
    copy = body[i]
    if first_zero:
        copy = replace(copy, operands=copy.operands[:3] + (Imm.of(1),) + copy.operands[4:])
    extra: list = []
    for _ in range(copies - 1):
        if commit_between:
            extra.append(Instr("wgmma.commit_group.sync.aligned", ()))
        extra.append(copy)
    return program.with_kernel_body(body[:i + 1] + extra + body[i + 1:])
