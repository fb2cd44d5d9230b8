"""The reference interpreter: one CTA, every thread at once as numpy arrays (a cluster of several
CTAs: one machine per CTA, run by ``cluster.Group``).

Control flow: each function's CFG (``fuzzptx.ptx.cfg``) runs on a SIMT stack with
immediate post-dominator reconvergence.  An entry is (block, mask, reconvergence
block); a guarded branch that splits the active threads turns the entry into its
reconvergence point and pushes both sides, so per-thread loop trip counts,
if/else and early exits all work with no per-thread Python loop.  ``exit`` removes
threads for good; ``ret`` ends them for the current call.  ``.func`` calls run the
callee's CFG in a fresh frame (registers and per-thread ``.param`` variables).

Values are raw bits (uint64 [threads]) plus optional shadows (``values``): a branch
on an undefined predicate, or an access through an undefined address, makes the
whole run's outcome undefined (``RefResult.undefined``) rather than guessing.
wgmma results are applied when the covering ``wgmma.wait_group`` executes
(``wgmma_exec``), so reads of in-flight accumulators see UNDEF, as the spec says.

Modelling decisions (spec mode):
- Memory is sequentially consistent in program order, all threads in lockstep: data
  races between threads are not detected (their outcome is taken as the sequential one).
- Barriers without a count must be reached by every live thread together (divergent ones raise
  ``Unsupported``); threads at a named barrier short of its count, or at ``barrier.cluster.wait``
  short of arrivals, while others run elsewhere are suspended until the count fills
  (``m.parked``; ``control.run_function`` resumes them after the barrier).
- Value sets propagate through mov/ld/st/cvt/neg/abs/add/sub/mul/fma, packing, and
  sign-bit xor/and; any other operation on a non-exact value gives UNDEF for that thread.
- ``add``/``sub`` (f32, f16, bf16) without a rounding modifier fed by an unrounded ``mul`` of its type allows
  both the fused and the unfused result (ptxas may contract them into an fma).
- Uninitialised registers, shared and local memory, the special registers whose value the machine
  picks (``VOLATILE_SPECIAL``: %warpid, %smid, %clock...), integer division by zero, CC.CF before a
  ``.cc`` write, shfl reads from lanes that do not execute it, the values atomics return where
  threads share an address, and in-flight wgmma registers are UNDEF.  Per-thread ``.param``
  variables are tracked as defined/undefined per variable, not per byte.
- ``mode="hardware"`` runs the same scalar semantics with dense wgmma computed as the
  H100 does (``hw_numerics``, proved bit-exact: docs/numerics.md), and so do sparse
  wgmma, ``mma``/``mma.sp`` and ``wmma.mma`` (``warp_exec``; the forms ptxas emulates
  through ``mma_emulation``); integer forms are exact in both modes.
- Scalar coverage, form by form and by ISA chapter: ``coverage.py`` / docs/reference-coverage.md.
Not modelled (``Unsupported``, one line): vector and 128-bit
atomics, vmad, warp instructions whose membermask names threads on another path.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from fuzzptx.perf import per_object
from fuzzptx.ptx.cfg import build_cfg
from fuzzptx.ptx.ir import Function, Imm, Instr, Neg, Reg, RegDecl, Scope, Sym, VarDecl, Vec
from fuzzptx.ptx.smem import shared_layout

import fuzzptx.oracles.reference.cluster as cluster
import fuzzptx.oracles.reference.fp as fp
from .errors import MissingInput, Unsupported
from .memory import CONST_BASE, Memory, Region
from .ops import HALF
from .values import TYPES, U64, UNDEF, Shadow, count_nonzero, mask, merge, sign_extend
import fuzzptx.oracles.reference.wgmma_exec as wgmma_exec
from fuzzptx.data import buffer_bytes

_U64 = np.dtype(np.uint64)
VOLATILE_SPECIAL = frozenset(
    ("%warpid", "%nwarpid", "%smid", "%nsmid", "%gridid", "%clock", "%clock_hi", "%clock64", "%globaltimer",
     "%globaltimer_lo", "%globaltimer_hi", "%total_smem_size", "%aggr_smem_size", "%current_graph_exec",
     "%reserved_smem_offset_begin", "%reserved_smem_offset_end", "%reserved_smem_offset_cap",
     "%reserved_smem_offset_0", "%reserved_smem_offset_1")
    + tuple(f"%envreg{i}" for i in range(32)) + tuple(f"%pm{i}" for i in range(8))
    + tuple(f"%pm{i}_64" for i in range(8)))
MAX_THREADS = 512
FUNC_BASE = 0x100000  # fake code addresses of functions
STEP_LIMIT = 50_000  # instruction executions (each over all threads): ten times the longest generated program
SPACES = {"global": "global", "shared": "shared", "shared::cta": "shared", "param": "param",
          "param::entry": "param", "param::func": "param", "const": "const", "local": "local",
          "shared::cluster": "shared"}


# ------------------------------------------------------------------ per-function facts


@dataclass(eq=False)
class FuncInfo:
    fn: Function
    blocks: tuple
    ipdom: tuple[int | None, ...]
    widths: dict[str, int]
    pvars: dict[str, int]  # per-thread .param variables declared in the body: name -> bytes
    wg_regs: frozenset[str]
    segments: dict = field(default_factory=dict)  # block -> its body with mov-immediate runs grouped (control.py)


def _ipdoms(succs: list[list[int]]) -> tuple[int | None, ...]:
    """Immediate post-dominators (None: the function exit) from successor lists."""
    n = len(succs)
    exit_ = n
    full = (1 << (n + 1)) - 1
    pdom = [full] * n + [1 << exit_]
    changed = True
    while changed:
        changed = False
        for b in range(n - 1, -1, -1):
            new = full
            for s in succs[b] or [exit_]:
                new &= pdom[s]
            new |= 1 << b
            if new != pdom[b]:
                pdom[b] = new
                changed = True
    out: list[int | None] = []
    for b in range(n):
        strict = [d for d in range(n + 1) if (pdom[b] >> d) & 1 and d != b]
        if not strict or pdom[b] == full:
            out.append(None)
            continue
        best = max(strict, key=lambda d: bin(pdom[d]).count("1"))
        out.append(None if best == exit_ else best)
    return tuple(out)


def _exit_succs(cfg) -> list[list[int]]:
    """CFG successors plus an edge to the exit for ret/exit (guarded ones keep the fall-through)."""
    out = []
    for b in cfg.blocks:
        s = list(b.succs)
        last = b.instrs[-1] if b.instrs else None
        if last is not None and last.base in ("ret", "exit", "trap"):
            s = s + [len(cfg.blocks)]
        elif not s and (last is None or last.base != "bra"):
            s = [len(cfg.blocks)]
        out.append(s)
    return out


@per_object(256)
def func_info(fn: Function) -> FuncInfo:
    """Cached per function *object*: equal functions from two files differ in their source locations."""
    return _func_info(fn)


@dataclass(eq=False)
class BodyDecls:
    """The statements of a function body that the machine set-up and ``FuncInfo`` look at, each
    list in textual order: one pass over the body serves both (a fuzz kernel has ~500 statements)."""
    regs: list[RegDecl] = field(default_factory=list)
    vars: list[VarDecl] = field(default_factory=list)
    wgmma: list[Instr] = field(default_factory=list)  # wgmma.mma_async instructions


@per_object(256)
def body_decls(fn: Function) -> BodyDecls:
    """Cached per function object, like ``func_info`` (``Machine`` scans every function, then
    ``func_info`` the ones that run)."""
    out = BodyDecls()
    _scan(fn.body or (), out)
    return out


def _scan(body, out: BodyDecls) -> None:
    """``walk(body)``, sorted into ``out``; exact type checks first (nearly every statement is an
    ``Instr``), then the isinstance tests ``walk``'s users make."""
    for s in body:
        t = type(s)
        if t is Instr:
            op = s.opcode
            if ".mma_async" in op and op.startswith("wgmma."):  # base == "wgmma"
                out.wgmma.append(s)
        elif t is RegDecl:
            out.regs.append(s)
        elif t is VarDecl:
            out.vars.append(s)
        elif isinstance(s, Scope):
            _scan(s.body, out)
        elif isinstance(s, RegDecl):
            out.regs.append(s)
        elif isinstance(s, VarDecl):
            out.vars.append(s)
        elif isinstance(s, Instr) and s.base == "wgmma" and ".mma_async" in s.opcode:
            out.wgmma.append(s)


def _func_info(fn: Function) -> FuncInfo:
    cfg = build_cfg(fn)
    widths: dict[str, int] = {}
    pvars: dict[str, int] = {}
    wg: set[str] = set()
    for p in fn.params + fn.returns:
        if fn.kind == "entry":
            continue  # kernel parameters live in the (uniform) parameter region
        if p.space == ".reg":
            widths[p.name] = TYPES[p.type.lstrip(".")][0]
        else:
            pvars[p.name] = _var_bytes(p.type, p.dims)
    # RegDecls, .param VarDecls and wgmma instructions fill different tables and only a RegDecl
    # can raise: taking each kind in its own textual order gives what one walk in order gives.
    decls = body_decls(fn)
    for s in decls.regs:
        t = s.type.lstrip(".")
        if t not in TYPES or s.vector:
            raise Unsupported(f"register declaration .{t}{' ' + s.vector if s.vector else ''} is not supported",
                              *(_locargs(s)))
        widths.update(dict.fromkeys(s.expand(), TYPES[t][0]))
    for s in decls.vars:
        if s.space == ".param":
            pvars[s.name] = _var_bytes(s.type, s.dims)
    for s in decls.wgmma:
        for op in s.operands[:2]:
            if isinstance(op, Vec):
                wg.update([i.name for i in op.items if isinstance(i, Reg)])
    succs = _exit_succs(cfg)
    return FuncInfo(fn, cfg.blocks, _ipdoms(succs), widths, pvars, frozenset(wg))


def _locargs(s) -> tuple:
    loc = getattr(s, "loc", None)
    return (loc.file, loc.line) if loc is not None else ()


def _var_bytes(type_: str, dims) -> int:
    t = type_.lstrip(".")
    eb = max(TYPES[t][0] // 8, 1) if t in TYPES else 1
    count = 1
    for d in dims:
        count *= d or 0
    return eb * count


# ------------------------------------------------------------------ frames


@dataclass(eq=False)
class Frame:
    info: FuncInfo
    regs: dict[str, np.ndarray] = field(default_factory=dict)
    shadows: dict[str, Shadow] = field(default_factory=dict)
    pdata: dict[str, np.ndarray] = field(default_factory=dict)  # per-thread param bytes [T, size]
    pundef: dict[str, np.ndarray] = field(default_factory=dict)  # per-thread: contents undefined
    live: np.ndarray | None = None  # threads that have not returned from this call
    contract: dict = field(default_factory=dict)  # reg -> (a bits, b bits, threads, ftz, type): an unrounded mul product (alu.CONTRACTED)
    cc: np.ndarray | None = None  # CC.CF per thread (intx.h_carry); None: never written
    cc_undef: np.ndarray | None = None  # threads whose CC.CF is undefined

    @property
    def widths(self) -> dict[str, int]:
        return self.info.widths


# ------------------------------------------------------------------ the machine


class Machine:
    """State of one CTA run: memory, special registers, the alive mask, wgmma bookkeeping."""
    def __init__(self, program, mode: str = "spec", rank: int = 0):
        """``rank``: the CTA's rank in its cluster (the grid is one cluster: ``cluster.check_launch``)."""
        self.program = program
        self.module = program.module
        self.mode = mode
        la = program.launch
        self.kernel = self.module.function(la.kernel)
        c = cluster.check_launch(self.kernel, tuple(la.grid), tuple(getattr(la, "cluster", (1, 1, 1))))
        self.cluster = replace(c, rank=rank)
        self.peers: tuple | None = None  # the CTAs of a cluster of several, by rank (cluster.Group)
        self.group = None
        bx, by, bz = la.block
        self.n = n = bx * by * bz
        if not 1 <= n <= MAX_THREADS:
            raise MissingInput(f"block of {n} threads: the reference runs 1 to {MAX_THREADS} threads (4 warpgroups)")
        lin = np.arange(n, dtype=np.uint64)
        self.tid = lin
        self.tid32 = lin.astype(np.int32)
        self.all = np.ones(n, bool)
        self.idx_all = np.arange(n)
        self._idx: tuple = (None, None)  # (mask array, its flatnonzero): see active_idx
        self.alive = np.ones(n, bool)
        self.steps = 0
        self.branches_taken: set[int] = set()  # lines (see RefResult)
        self.blocks_run: set[tuple[int, int]] = set()  # (first, last) lines (see RefResult)
        self.depth = 0
        self.cur_act = self.all
        self.cur_reach = self.all  # threads at the running instruction before its guard (control.exec_instr)
        self.notes: list[str] = []
        # threads suspended at a named barrier short of its count (mem_ops.h_bar), and where each
        # group resumes once the count fills (control.run_function)
        self.parked: np.ndarray | None = None
        self.parking: tuple | None = None  # (barrier, threads) just suspended by the running instruction
        self.parked_at: dict[int, list] = {}  # barrier -> [(frame, block, index, threads, reconvergence)]
        self.resume: list = []  # groups whose barrier completed, to push on their frame's stack
        self.mbar_waits: dict = {}  # (mbarrier.MBARRIER_WAIT, address) -> its phases when threads were suspended there
        lane = lin % U64(32)
        le = (U64(2) << lane) - U64(1)
        lt = (U64(1) << lane) - U64(1)
        self.special = {
            "%tid.x": lin % U64(bx), "%tid.y": (lin // U64(bx)) % U64(by), "%tid.z": lin // U64(bx * by),
            "%ntid.x": np.full(n, bx, np.uint64), "%ntid.y": np.full(n, by, np.uint64),
            "%ntid.z": np.full(n, bz, np.uint64), "%laneid": lane,
            "%ctaid.x": np.zeros(n, np.uint64), "%ctaid.y": np.zeros(n, np.uint64), "%ctaid.z": np.zeros(n, np.uint64),
            "%nctaid.x": np.ones(n, np.uint64), "%nctaid.y": np.ones(n, np.uint64), "%nctaid.z": np.ones(n, np.uint64),
            "%lanemask_eq": U64(1) << lane, "%lanemask_le": le, "%lanemask_lt": lt,
            "%lanemask_ge": ~lt & U64(0xFFFFFFFF), "%lanemask_gt": ~le & U64(0xFFFFFFFF),
            "%dynamic_smem_size": np.full(n, la.dynamic_smem, np.uint64),
            **self.cluster.special(n),
        }
        # Registers whose value the spec does not fix (machine placement, clocks, timers, counters,
        # driver-defined values, sizes that include ptxas's and the driver's reservations) read as
        # UNDEF: any value is allowed there, none is invented, and a branch on one makes the run
        # undefined.  ``VOLATILE_SPECIAL`` lists them (docs/reference-coverage.md).
        self.volatile_special = VOLATILE_SPECIAL
        self._imm_cache: dict = {}
        self.mem = Memory()
        self.symbols: dict[str, tuple[str, int]] = {}  # name -> (space, address)
        self.buffers: dict[str, Region] = {}
        self._setup_memory()
        self.wg = wgmma_exec.WarpgroupState.for_threads(n)

    # -------------------------------------------------------------- setup

    def _setup_memory(self) -> None:
        prog, k = self.program, self.kernel
        for b in prog.buffers:
            self.buffers[b.name] = self.mem.add_global(b.name, buffer_bytes(b))
        scalars = dict(prog.scalars)
        # kernel parameters, naturally aligned, in declaration order
        offs, off = {}, 0
        for p in k.params:
            size = _var_bytes(p.type, p.dims) or 8
            al = p.align or min(size, 8)
            off = (off + al - 1) // al * al
            offs[p.name] = (off, size)
            off += size
        pbytes = np.zeros(max(off, 8), np.uint8)
        tmaps: dict[str, list[int]] = {}
        for t in getattr(prog, "tensormaps", ()):
            tmaps.setdefault(t.name, []).append(t.at)
        opaque = []  # tensor maps: the driver's encoding, which the reference never reads
        for p in k.params:
            o, size = offs[p.name]
            if p.name in tmaps:
                self.symbols[p.name] = ("param", CONST_BASE + o)
                if p.name not in scalars:  # the whole parameter is the map
                    opaque.append((o, size))
                    continue
                # maps inside a by-value struct: the struct's bytes, each map's 128 of them opaque
                opaque += [(o + at, 128) for at in tmaps[p.name]]
            if p.name in self.buffers:
                val = self.buffers[p.name].base
            elif p.name in scalars:
                val = scalars[p.name]
            else:
                raise MissingInput(f"kernel parameter {p.name!r} has no BUFFER or PARAM value", *_locargs(k))
            pbytes[o:o + size] = np.frombuffer(int(val & ((1 << (8 * size)) - 1)).to_bytes(size, "little"), np.uint8)
            self.symbols[p.name] = ("param", CONST_BASE + o)
        for b in prog.buffers:  # a buffer whose address sits inside a by-value struct (CUTLASS's Params)
            if b.param:
                o = offs[b.param][0] + b.at
                pbytes[o:o + 8] = np.frombuffer(int(self.buffers[b.name].base).to_bytes(8, "little"), np.uint8)
        params = self.mem.set_params(pbytes)
        if opaque:
            params.ensure_shadow()
            for o, size in opaque:
                params.skind[o:o + size] = UNDEF
        mapped = {t.buffer for t in getattr(prog, "tensormaps", ())}
        for b in prog.buffers:
            if (b.param or b.name) not in offs and b.name not in mapped:
                raise MissingInput(f"BUFFER {b.name} names no parameter of kernel {k.name}")
        # shared memory as ptxas lays it out (fuzzptx.ptx.smem, checked on the H100), then the
        # module's and functions' global/const variables
        lay = shared_layout(self.module, k)
        for name, off in lay.offsets.items():
            self.symbols[name] = ("shared", off)
        soff = lay.end(self.program.launch.dynamic_smem)
        decls = [i for i in self.module.items if isinstance(i, VarDecl)]
        for fn in self.module.functions():
            decls += body_decls(fn).vars
        local_end = 0
        for v in decls:
            space = v.space.lstrip(".")
            if space in ("global", "const"):
                content = _initial_bytes(v)
                r = self.mem.add_global(v.name, content, writable=space == "global", space=space)
                self.symbols[v.name] = (space, r.base)
            elif space == "local":
                # one static frame per thread: every function's .local variables at their own offsets
                # (a recursive function's activations would share theirs: calls deeper than 32 are refused)
                size = _var_bytes(v.type, v.dims) or _var_bytes(v.type, ())
                al = max(v.align or 1, max(TYPES.get(v.type.lstrip("."), (8,))[0] // 8, 1))
                local_end = (local_end + al - 1) // al * al
                self.symbols[v.name] = ("local", local_end)
                local_end += size
        if local_end:
            self.mem.set_local(local_end, self.n)
        self.mem.set_shared(soff)
        # functions have addresses too (mov.u64 %rd, fn; call through a register)
        self.func_at: dict[int, str] = {}
        for i, fn in enumerate(self.module.functions()):
            if fn.name not in self.symbols:
                addr = FUNC_BASE + 16 * i
                self.symbols[fn.name] = ("func", addr)
                self.func_at[addr] = fn.name

    # -------------------------------------------------------------- operands

    def read(self, f: Frame, op, t: str, ins: Instr) -> tuple[np.ndarray, Shadow | None]:
        """Bits (uint64 [T]) and shadow of an operand read as type ``t``."""
        if isinstance(op, Reg):
            name = op.name
            bits = f.regs.get(name)
            if bits is not None:
                if name in f.info.wg_regs:
                    return self.wg.on_read(self, f, name, bits, f.shadows.get(name))
                return bits, f.shadows.get(name)
            if name in self.special:
                return self.special[name], None
            if name in self.volatile_special:
                return np.zeros(self.n, np.uint64), Shadow.undef(self.n, 64)
            w = f.widths.get(name)
            if w is None:
                if name.startswith("%") and "." in name:
                    raise Unsupported.at(ins, f"special register {name} is not supported")
                raise Unsupported.at(ins, f"register {name} is not declared")
            if name in f.info.wg_regs:
                self.wg.touch(self, f, name)
            return np.zeros(self.n, np.uint64), Shadow.undef(self.n, w)  # never written: undefined
        if isinstance(op, Imm):
            key = (op.text, t)
            v = self._imm_cache.get(key)
            if v is None:
                v = np.full(self.n, _imm_bits(op, t, ins), np.uint64)
                v.flags.writeable = False
                self._imm_cache[key] = v
            return v, None
        if isinstance(op, Sym):
            space, addr = self.symbol(op.name, ins)
            return np.full(self.n, addr, np.uint64), None
        if isinstance(op, Neg):
            b, s = self.read(f, op.reg, t, ins)
            return b ^ U64(1), s
        raise Unsupported.at(ins, f"operand {op} is not supported here")

    def mov_imm(self, ins, t: str, reg_width: int) -> np.ndarray:
        """What ``mov.t reg, imm`` leaves in a register of ``reg_width`` bits, for all threads
        (read-only, shared: registers are replaced, never written in place)."""
        key = (ins.operands[1].text, t, reg_width)
        v = self._imm_cache.get(key)
        if v is None:
            w = min(TYPES[t][0], reg_width)
            bits, _ = self.read(None, ins.operands[1], t, ins)
            v = bits & mask(w) if w < 64 else bits
            v.flags.writeable = False
            self._imm_cache[key] = v
        return v

    def symbol(self, name: str, ins) -> tuple[str, int]:
        s = self.symbols.get(name)
        if s is None:
            raise Unsupported.at(ins, f"symbol {name!r} is not a variable or parameter the reference knows")
        return s

    def write(self, f: Frame, reg, bits: np.ndarray, sh: Shadow | None, act: np.ndarray, ins: Instr,
              ext: str | None = None) -> None:
        """Write the active threads of register ``reg``; ``ext`` (a type) extends narrower values."""
        # the most called method of the machine (a third of its calls write a register for the first
        # time under a partial mask): exact type tests first, constants hoisted, no U64(0) per call
        if type(reg) is not Reg:
            if isinstance(reg, Sym) and reg.name == "_":
                return
            if not isinstance(reg, Reg):
                raise Unsupported.at(ins, f"destination {reg} is not a register")
        name = reg.name
        info = f.info
        w = info.widths.get(name)
        if w is None:
            raise Unsupported.at(ins, f"register {name} is not declared")
        if ext is not None:
            tw, tk = TYPES[ext]
            if tw < w:
                if tk == "s":
                    bits = sign_extend(bits, tw).view(np.uint64)
                    if sh is not None:
                        sh = Shadow.undef(self.n, w, sh.nonexact())
                else:
                    bits = bits & mask(tw)
        if w < 64:
            bits = bits & mask(w)
        if f.contract:
            f.contract.pop(name, None)
        if name in info.wg_regs:
            self.wg.on_write(self, f, name, act)
        if act is self.all or count_nonzero(act) == act.size:  # act.all(), at a sixth of the cost
            f.regs[name] = bits
            if sh is None:
                f.shadows.pop(name, None)
            else:
                f.shadows[name] = sh
            return
        old = f.regs.get(name)
        if old is None:
            # np.where(act, bits, U64(0)); for uint64 bits, the product with the mask is the same
            f.regs[name] = np.multiply(bits, act) if bits.dtype == _U64 else np.where(act, bits, U64(0))
            if sh is None:  # what merging into an all-UNDEF old shadow gives
                f.shadows[name] = Shadow.undef(self.n, w, ~act)
                return
            old = np.zeros(self.n, np.uint64)
            old_sh = Shadow.undef(self.n, w)
        else:
            old_sh = f.shadows.get(name)
        f.regs[name] = np.where(act, bits, old)
        new_sh = merge(old_sh, sh, act, self.n, w)
        if new_sh is None:
            f.shadows.pop(name, None)
        else:
            f.shadows[name] = new_sh

    def active_idx(self, act: np.ndarray) -> np.ndarray:
        """``np.flatnonzero(act)``, kept for the mask object the instructions of a block share.

        Masks are never changed in place except by ``control.run_function``, which calls
        ``masks_changed`` when it does."""
        if act is self.all:
            return self.idx_all
        c = self._idx
        if c[0] is act:
            return c[1]
        idx = np.flatnonzero(act)
        self._idx = (act, idx)
        return idx

    def masks_changed(self) -> None:
        self._idx = (None, None)

    def note(self, text: str) -> None:
        if len(self.notes) < 20 and text not in self.notes:
            self.notes.append(text)


def _imm_bits(op: Imm, t: str, ins) -> int:
    w, kind = TYPES.get(t, (64, "b"))
    text = op.text.lstrip("-")
    neg = op.text.startswith("-")
    if kind in "fx":
        if text[:2] in ("0f", "0F", "0d", "0D"):
            raw = int(text[2:], 16)
            width = 32 if text[1] in "fF" else 64
            if width == w:
                return raw ^ ((1 << (w - 1)) if neg else 0)
            val = float(op.value)
        else:
            val = float(op.value)
        fmt = HALF.get(t, t)
        if kind == "x":
            raise Unsupported.at(ins, f"immediate for packed .{t}")
        return int(fp.encode(fmt, fp.fround(np.array([val]), fmt, "rn"))[0])
    if isinstance(op.value, float):
        if text[:2] in ("0f", "0F"):
            return int(text[2:], 16)
        if text[:2] in ("0d", "0D"):
            return int(text[2:], 16)
        raise Unsupported.at(ins, f"float immediate {op.text} for .{t}")
    return int(op.value) & ((1 << w) - 1 if w < 64 else (1 << 64) - 1)


def _initial_bytes(v: VarDecl) -> np.ndarray:
    import re

    size = _var_bytes(v.type, v.dims) or _var_bytes(v.type, ())
    out = np.zeros(size, np.uint8)
    if v.init:
        t = v.type.lstrip(".")
        eb = max(TYPES[t][0] // 8, 1)
        nums = re.findall(r"-?0[xX][0-9a-fA-F]+|-?\d+", v.init)
        for i, s in enumerate(nums[: size // eb]):
            val = int(s, 0) & ((1 << (8 * eb)) - 1)
            out[i * eb:(i + 1) * eb] = np.frombuffer(val.to_bytes(eb, "little"), np.uint8)
    return out
