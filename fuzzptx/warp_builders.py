"""Single-CTA programs for the warp-level tensor-core forms -- mma.sync and mma.sp, sparse wgmma,
wmma load/mma/store, ldmatrix/stmatrix -- with fresh seeded inputs, built from catalogue forms.

They are what the H100 proof runs (``benchmarks/hw_warp_forms.py``) launch and what the corpus
builder and the tests rebuild, so they live with the other catalogue-built programs
(``fuzzptx.builders``, ``fuzzptx.kernels``).
"""
from __future__ import annotations

import numpy as np

from fuzzptx import isa
from fuzzptx.data import element_bytes
from fuzzptx.isa import ELEMENT_BITS
from fuzzptx.isa.wgmma import d_register_count
from fuzzptx.isa import sparse as S
from fuzzptx.isa.layouts import MatrixDescriptor
from fuzzptx.builders import KernelBuilder, tile_plan
from fuzzptx.ptx.ir import Addr, Imm, Reg, Vec

FP8 = ("e4m3", "e5m2")
_BUF = {"s4": "b32", "u4": "b32", "b1": "b32"}  # sub-byte operands: raw bit images


def _buf(t: str) -> str:
    return _BUF.get(t, t)


def _regtype(elem: str) -> str:
    return ".b64" if elem == "f64" else ".b32"


def _load_regs(kb: KernelBuilder, ptr: Reg, rtype: str, n: int) -> tuple[Reg, ...]:
    """Thread t loads n registers (4 or 8 bytes each) at ``ptr + (t*n + i)*size``."""
    size = 8 if rtype == ".b64" else 4
    regs = kb.regs(rtype, n)
    addr = kb.thread_address(ptr, size * n)
    for i, r in enumerate(regs):
        kb.emit(f"ld.global{rtype}", r, Addr(addr, size * i))
    return regs


def _store_regs(kb: KernelBuilder, ptr: Reg, regs, rtype: str) -> None:
    size = 8 if rtype == ".b64" else 4
    addr = kb.thread_address(ptr, size * len(regs))
    for i, r in enumerate(regs):
        kb.emit(f"st.global{rtype}", Addr(addr, size * i), r)


def _version(f) -> str:
    return "%d.%d" % max(f.min_ptx, (8, 0))  # .target sm_90a needs PTX 8.0


def _target(f) -> str:
    return "sm_90a"


def _hex_words(words: np.ndarray) -> str:
    return "hex:" + np.asarray(words, np.uint32).astype("<u4").tobytes().hex()


# ---------------------------------------------------------------- mma.sync / mma.sp


def mma_program(form, *, seed: int, init: str = "random", sel: int = 0, ordered: bool = True,
                warps: int = 2, name: str = "k"):

    kb = KernelBuilder(name, 32 * warps, _version(form), _target(form))
    kb.tid()
    na, nb, nc, nd = (form.operand(r).count for r in ("a", "b", "c", "d"))
    ra, rb, rc = _regtype(form.atype), _regtype(form.btype), _regtype(form.ctype)
    wa, wb, wc = (8 if r == ".b64" else 4 for r in (ra, rb, rc))
    pa = kb.buffer("a", _buf(form.atype), 32 * warps * na * wa * 8 // _bits(_buf(form.atype)), init, seed)
    pb = kb.buffer("b", _buf(form.btype), 32 * warps * nb * wb * 8 // _bits(_buf(form.btype)), init, seed + 1)
    pc = kb.buffer("c", form.ctype, 32 * warps * nc * wc * 8 // _bits(form.ctype), init, seed + 2)
    d_bytes = 32 * warps * nd * (8 if form.dtype == "f64" else 4)
    pd = kb.buffer("d", form.dtype, d_bytes * 8 // _bits(form.dtype), "zeros", 0, output=True)
    meta = None
    if form.family == "mma.sp":
        spec = S.spec_for(form)
        rng = np.random.default_rng(seed + 7)
        words = rng.integers(0, 1 << 32, size=32 * warps, dtype=np.uint64).astype(np.uint32)  # garbage elsewhere
        for w in range(warps):
            fields = S.random_fields(spec, rng, ordered)
            sup = S.supplying_threads(spec, sel)
            enc = S.encode_metadata(spec, fields, sel)
            words[32 * w:32 * (w + 1)][sup] = enc[sup]
        pm = kb.buffer("m", "u32", 32 * warps, _hex_words(words), 0)
        (meta,) = _load_regs(kb, pm, ".b32", 1)
    a = _load_regs(kb, pa, ra, na)
    b = _load_regs(kb, pb, rb, nb)
    c = _load_regs(kb, pc, rc, nc)
    rd = _regtype(form.dtype)
    d = kb.regs(rd, nd)
    ops = [Vec(d), Vec(a), Vec(b), Vec(c)] + ([meta, Imm.of(sel)] if meta is not None else [])
    kb.emit(form.opcode, *ops)
    _store_regs(kb, pd, d, rd)
    return kb.build(notes=(f"mma_program {form.opcode} sel={sel} ordered={ordered} init={init} seed={seed}",))


def _bits(t: str) -> int:

    return 8 * element_bytes(t)


# ---------------------------------------------------------------- wgmma.mma_async.sp

_D_REG = {"f32": ".f32", "s32": ".s32", "f16": ".b32"}


def wgmma_sp_program(form, *, seed: int, init: str = "random", a_swizzle="none", b_swizzle="none",
                     a_major="K", b_major="K", scale_d=True, pred_value=False, scale_a=1, scale_b=1,
                     sel=0, ordered=True, name="k"):
    """One sparse wgmma: packed A (registers or descriptor), B by descriptor (64 bytes of K per row)."""

    n = form.shape.n
    bits_a, bits_b = ELEMENT_BITS[form.atype], ELEMENT_BITS[form.btype]
    nd = d_register_count(form.dtype, n)
    kb = KernelBuilder(name, 128, _version(form), form.target)
    kb.tid()
    b_plan = tile_plan(n, bits_b, 2, b_major, b_swizzle)
    if form.a_source == "desc":
        a_plan = tile_plan(64, bits_a, 1, a_major, a_swizzle)
        pa = kb.buffer("a", _buf(form.atype), a_plan.nbytes * 8 // _bits(_buf(form.atype)), init, seed)
    else:
        a_plan = None
        pa = kb.buffer("a", _buf(form.atype), 128 * 4 * 32 // _bits(_buf(form.atype)), init, seed)
    pb = kb.buffer("b", _buf(form.btype), b_plan.nbytes * 8 // _bits(_buf(form.btype)), init, seed + 1)
    d_elems = 128 * nd * (2 if form.dtype == "f16" else 1)
    pc = kb.buffer("c", form.dtype, d_elems, init, seed + 2)
    pd = kb.buffer("d", form.dtype, d_elems, "zeros", 0, output=True)
    spec = S.spec_for(form)
    rng = np.random.default_rng(seed + 7)
    words = rng.integers(0, 1 << 32, size=128, dtype=np.uint64).astype(np.uint32)
    sup = S.supplying_threads(spec, sel)
    enc = S.encode_metadata(spec, S.random_fields(spec, rng, ordered), sel)
    words[sup] = enc[sup]
    pm = kb.buffer("m", "u32", 128, _hex_words(words), 0)
    pred = None
    if scale_d == "pred":
        flag = kb.scalar("sd", int(bool(pred_value)))
        pred = kb.reg(".pred")
        kb.emit("setp.ne.u32", pred, flag, 0)
    sb = kb.shared(b_plan.nbytes)
    kb.copy_to_shared(pb, sb, b_plan.nbytes, sync=a_plan is None)
    if a_plan is not None:
        sa = kb.shared(a_plan.nbytes)
        kb.copy_to_shared(pa, sa, a_plan.nbytes)
        lay = a_plan.layouts[0]
        a_op = kb.descriptor(sa, lay.start, MatrixDescriptor(0, lay.lbo, lay.sbo, lay.base_offset, lay.swizzle))
    else:
        a_op = Vec(_load_regs(kb, pa, ".b32", 4))
    lay = b_plan.layouts[0]
    b_op = kb.descriptor(sb, lay.start, MatrixDescriptor(0, lay.lbo, lay.sbo, lay.base_offset, lay.swizzle))
    (meta,) = _load_regs(kb, pm, ".b32", 1)
    dreg = _D_REG[form.dtype]
    d = _load_regs(kb, pc, dreg if dreg != ".f32" else ".f32", nd) if dreg != ".b32" else _load_regs(kb, pc, ".b32", nd)
    kb.emit("wgmma.fence.sync.aligned")
    ops = []
    for spec_ in form.operands:
        r = spec_.role
        ops.append({
            "d": lambda: Vec(d), "a": lambda: a_op, "a_desc": lambda: a_op, "b_desc": lambda: b_op,
            "sp_meta": lambda: meta, "sp_sel": lambda: Imm.of(sel),
            "scale_d": lambda: pred if scale_d == "pred" else Imm.of(int(bool(scale_d))),
            "imm_scale_a": lambda: Imm.of(scale_a), "imm_scale_b": lambda: Imm.of(scale_b),
            "imm_trans_a": lambda: Imm.of(int(a_major == "MN")), "imm_trans_b": lambda: Imm.of(int(b_major == "MN")),
        }[r]())
    kb.emit(form.opcode, *ops)
    kb.emit("wgmma.commit_group.sync.aligned")
    kb.emit("wgmma.wait_group.sync.aligned", 0)
    _store_regs(kb, pd, d, ".b32" if dreg == ".b32" else dreg)
    return kb.build(notes=(f"wgmma_sp_program {form.key} a={a_swizzle}/{a_major} b={b_swizzle}/{b_major} "
                           f"scale_d={scale_d}({int(pred_value)}) scale_a={scale_a} scale_b={scale_b} sel={sel} "
                           f"ordered={ordered} init={init} seed={seed}",))


# ---------------------------------------------------------------- ldmatrix / stmatrix


def move_program(form, *, seed: int, name: str = "k", warps: int = 2):
    """ldmatrix: shared image -> registers -> global; stmatrix: registers -> shared -> global.

    Row addresses are a random permutation of 16-byte rows (so the mapping of lanes to
    rows is tested, not assumed contiguous); lanes that supply no address get a wild one.
    """
    num = int(form.attr("num"))
    space = str(form.attr("space"))
    kb = KernelBuilder(name, 32 * warps, _version(form), "sm_90a")
    tid = kb.tid()
    rows = 64 * warps  # a pool of 16-byte rows per CTA
    rng = np.random.default_rng(seed)
    perm = rng.permutation(rows).astype(np.uint32)
    offs = np.zeros(32 * warps, np.uint32)
    for w in range(warps):
        offs[32 * w:32 * w + 32] = perm[32 * w:32 * w + 32] * 16
    pr = kb.buffer("rowoff", "u32", 32 * warps, _hex_words(offs), 0)
    sm = kb.shared(rows * 16, 128)
    (off,) = _load_regs(kb, pr, ".b32", 1)
    base = kb.shared_address(sm)
    a32 = kb.reg(".b32")
    kb.emit("add.u32", a32, base, off)
    a64 = kb.reg(".b64")
    kb.emit("cvt.u64.u32", a64, a32)
    if space == "":  # generic address of the shared row
        kb.emit("cvta.shared.u64", a64, a64)
    if form.family == "ldmatrix":
        pin = kb.buffer("src", "b16", rows * 8, "random", seed + 1)
        kb.copy_to_shared(pin, sm, rows * 16)
        regs = kb.regs(".b32", num)
        kb.emit(form.opcode, Vec(regs), Addr(a64))
        pout = kb.buffer("out", "b32", 32 * warps * num, "zeros", 0, output=True)
        _store_regs(kb, pout, regs, ".b32")
    else:
        pin = kb.buffer("src", "b32", 32 * warps * num, "random", seed + 1)
        regs = _load_regs(kb, pin, ".b32", num)
        # zero the pool first so every output byte is defined
        z = kb.reg(".b32")
        kb.emit("mov.b32", z, 0)
        zs = kb.reg(".b32")
        kb.emit("mad.lo.u32", zs, tid, 4, base)
        for j in range(rows * 16 // (4 * 32 * warps)):
            kb.emit("st.shared.b32", Addr(zs, 4 * 32 * warps * j), z)
        kb.emit("bar.sync", 0)
        kb.emit(form.opcode, Addr(a64), Vec(regs))
        kb.emit("bar.sync", 0)
        pout = kb.buffer("out", "b32", rows * 4, "zeros", 0, output=True)
        g = kb.thread_address(pout, 4)
        for j in range(rows * 16 // (4 * 32 * warps)):
            x = kb.reg(".b32")
            kb.emit("ld.shared.b32", x, Addr(zs, 4 * 32 * warps * j))
            kb.emit("st.global.b32", Addr(g, 4 * 32 * warps * j), x)
    return kb.build(notes=(f"move_program {form.opcode} seed={seed}",))


# ---------------------------------------------------------------- wmma


def _wmma_load_form(shape, matrix: str, layout: str, space: str, t: str):
    sp = f".{space}" if space else ""
    op = f"wmma.load.{matrix}.sync.aligned.{layout}.{shape}{sp}.{t}"
    fs = isa.by_opcode(op)
    if not fs:
        raise KeyError(op)
    return fs[0]


def wmma_program(form, *, space: str, c_layout: str, d_layout: str, padded: bool, seed: int,
                 init: str = "random", warps: int = 2, name: str = "k", align_probe: bool = False):
    """Each warp: wmma.load a/b/c (from global or shared) -> wmma.mma -> wmma.store d (global or shared)."""

    s = form.shape
    kb = KernelBuilder(name, 32 * warps, _version(form), "sm_90a")
    kb.tid()
    warp = kb.reg(".b32")
    kb.emit("shr.u32", warp, kb.tid(), 5)
    mats = {"a": (s.m, s.k, form.atype, form.attr("layout_a")), "b": (s.k, s.n, form.btype, form.attr("layout_b")),
            "c": (s.m, s.n, form.ctype, c_layout)}
    regs: dict[str, tuple] = {}
    shared = space.startswith("shared")
    row_align = 16 if shared and not align_probe else 0
    plans = {}
    for mat, (r, c, t, lay) in mats.items():
        lf = _wmma_load_form(str(s), mat, lay, space, t)
        nregs = lf.operand("r").count
        frag_bytes = nregs * (8 if t == "f64" else 4)
        eb = ELEMENT_BITS[t]
        default = c if lay == "row" else r
        stride = _stride(default, frag_bytes, eb, padded, row_align)
        lead = r if lay == "row" else c
        nbytes = -(-(lead * stride * eb // 8) // 128) * 128
        bt = _buf(t)
        p = kb.buffer(mat, bt, warps * nbytes * 8 // _bits(bt), init, seed + ord(mat))
        off = kb.reg(".b64")
        kb.emit("mul.wide.u32", off, warp, nbytes)
        ad = kb.reg(".b64")
        if shared:
            sm = kb.shared(warps * nbytes, 128)
            kb.copy_to_shared(p, sm, warps * nbytes, sync=False)
            kb.emit("cvt.u64.u32", ad, kb.shared_address(sm))
            kb.emit("add.u64", ad, ad, off)
        else:
            kb.emit("add.u64", ad, p, off)
        plans[mat] = (lf, nregs, stride, ad)
    if shared:
        kb.emit("bar.sync", 0)
    for mat, (lf, nregs, stride, ad) in plans.items():
        rr = kb.regs(lf.operand("r").reg_types[0], nregs)
        extra = []
        if padded or mat == "a":  # the default stride written out once, too
            sr = kb.reg(".b32")
            kb.emit("mov.u32", sr, stride)
            extra = [sr]
        kb.emit(lf.opcode, Vec(rr), Addr(ad), *extra)
        regs[mat] = rr
    dt = form.dtype
    sf = next(f for f in isa.forms("wmma.store") if f.shape == s and f.dtype == dt and f.attr("layout") == d_layout
              and f.attr("space") == space)
    nd = sf.operand("r").count
    d = kb.regs(sf.operand("r").reg_types[0], nd)
    kb.emit(form.opcode, Vec(d), Vec(regs["a"]), Vec(regs["b"]), Vec(regs["c"]))
    frag_bytes = nd * (8 if dt == "f64" else 4)
    eb = ELEMENT_BITS[dt]
    default = s.n if d_layout == "row" else s.m
    stride = _stride(default, frag_bytes, eb, padded, row_align)
    lead = s.m if d_layout == "row" else s.n
    nbytes = -(-(lead * stride * eb // 8) // 512) * 512  # whole copy-out rounds of 2 warps x 8 bytes
    pd = kb.buffer("d", dt, warps * nbytes * 8 // eb, "zeros", 0, output=True)
    off = kb.reg(".b64")
    kb.emit("mul.wide.u32", off, warp, nbytes)
    wb = 8 if dt == "f64" else 4  # copy D out in whole elements (a value set cut in pieces is UNDEF)
    wt = f".b{8 * wb}"
    words = warps * nbytes // wb
    if shared:
        sm = kb.shared(warps * nbytes, 128)
        zero = kb.reg(wt)
        kb.emit(f"mov{wt}", zero, 0)
        zs = kb.reg(".b32")
        kb.emit("mad.lo.u32", zs, kb.tid(), wb, kb.shared_address(sm))
        for j in range(words // (32 * warps)):
            kb.emit(f"st.shared{wt}", Addr(zs, wb * 32 * warps * j), zero)
        kb.emit("bar.sync", 0)
        a32 = kb.shared_address(sm)
        ad = kb.reg(".b64")
        kb.emit("cvt.u64.u32", ad, a32)
        kb.emit("add.u64", ad, ad, off)
    else:
        ad = kb.reg(".b64")
        kb.emit("add.u64", ad, pd, off)
    extra = []
    if padded:
        sr = kb.reg(".b32")
        kb.emit("mov.u32", sr, stride)
        extra = [sr]
    kb.emit(sf.opcode, Addr(ad), Vec(d), *extra)
    if shared:
        kb.emit("bar.sync", 0)
        g = kb.thread_address(pd, wb)
        for j in range(words // (32 * warps)):
            x = kb.reg(wt)
            kb.emit(f"ld.shared{wt}", x, Addr(zs, wb * 32 * warps * j))
            kb.emit(f"st.global{wt}", Addr(g, wb * 32 * warps * j), x)
    return kb.build(notes=(f"wmma_program {form.opcode} space={space} c={c_layout} d={d_layout} padded={padded} "
                           f"init={init} seed={seed}",))


def _stride(default: int, frag_bytes: int, eb: int, padded: bool, row_align: int = 0) -> int:
    """The default stride, or one past it that keeps each row aligned to the fragment size
    (the spec's rule) or to ``row_align`` bytes when larger.

    Shared memory needs ``row_align=16`` on the H100: rows aligned only to a smaller
    fragment (8 bytes: s8 m16n16k16 A, bf16 m8n32k16 A, ...) trap 'misaligned address'
    there although the spec allows them (global memory takes them): see ``ALIGN_PROBES``.
    """
    if not padded:
        return default
    unit = max(frag_bytes, row_align) * 8 // eb
    return -(-default // unit) * unit + unit
