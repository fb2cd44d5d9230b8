"""Handlers for warp-level tensor-core instructions and sparse wgmma, in the interpreter's convention.

``h(m, f, ins, act)``: read operands through the machine, compute for every warp
with active threads, write through ``m.write`` (which applies ``act``).
``HANDLERS`` maps an opcode prefix to its handler; ``handler_for(ins)`` picks the
longest matching prefix (so ``wgmma.mma_async.sp`` wins over the interpreter's
own ``wgmma``).  ``control`` asks ``handler_for`` for these bases; ``install()`` puts it
first for every instruction (tests, proof scripts) through ``dispatch.FIRST``.

* ``mma.sync`` / ``mma.sp``: fragments from ``warp_layouts``, metadata from
  ``sparse``, arithmetic from ``mma_math``.  A warp not wholly active (``.aligned``
  broken) gets UNDEF results.
* ``wmma.load/store/mma``: the spec leaves the fragment layout unspecified
  (seed 002 §9.7.14.4.1), so a fragment register holds an opaque token ("matrix X
  of shape S, type T, layout L, loaded by warp w") and its bits read as UNDEF.
  ``wmma.mma`` on tokens and ``wmma.store`` of a token are exact (floats: spec
  sets); any other write to a fragment register breaks the token (its later use
  is UNDEF).  Uniform scaling of a fragment (which the spec allows) is not
  modelled: it reads UNDEF (conservative).
* ``ldmatrix`` / ``stmatrix`` ``.m8n8 .b16``: lanes 8j..8j+7 give the row
  addresses of matrix j; register j of lane l holds row l//4, columns 2(l%4)+{0,1}
  (``.trans``: the transpose).  The 8-bit shapes need sm_100a: Unsupported.
* ``wgmma.mma_async.sp``: like ``wgmma_exec``'s dense wgmma (same asynchrony
  model, same UB rules) with A expanded from its packed form and metadata.
* ``mode="hardware"`` (docs/numerics.md; proved on the H100): float
  ``mma``/``mma.sp``/``wmma.mma``/``wgmma.mma_async.sp`` give one exact result
  (``mma_math.hardware``; sparse forms with the metadata's true ``keep`` mask; dense fp8
  and m8n8k4 ``mma`` and fp8 ``mma.sp`` through ``mma_emulation``).  In spec mode too, positions the metadata did
  not select form no product (``wgmma_math.spec_with_keep``).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace as _replace

import numpy as np

from fuzzptx import isa
from fuzzptx.ptx.ir import Addr, Imm, Reg, Vec

import fuzzptx.oracles.reference.dispatch as dispatch
import fuzzptx.oracles.reference.formats as F
import fuzzptx.oracles.reference.mma_math as MM
import fuzzptx.isa.sparse as S
import fuzzptx.oracles.reference.warp_layouts as WL
from .errors import BadAddress, Undefined, Unsupported
from .values import EXACT, MAY_NAN, MAY_NEG_INF, MAY_POS_INF, SET, UNDEF, U64, Shadow
from .wgmma_math import spec_with_keep
from .hw_numerics import Unmodelled
import fuzzptx.oracles.reference.layouts as L
import fuzzptx.oracles.reference.observed as observed
import fuzzptx.oracles.reference.wgmma_exec as WX
from .descriptors import MatrixDescriptor
from .wgmma_math import wgmma_dense

WARP = 32


# ------------------------------------------------------------------ shadows per element


def _elem_info(sh: Shadow | None, n: int, reg_bits: int, eb: int):
    """Per element slot of a register: kind, lo, hi, flags arrays ``[n, reg_bits // eb]``."""
    per = max(reg_bits // eb, 1)
    kind = np.zeros((n, per), np.uint8)
    lo = np.zeros((n, per))
    hi = np.zeros((n, per))
    fl = np.zeros((n, per), np.uint8)
    if sh is None or sh.is_trivial():
        return kind, lo, hi, fl
    if sh.lane_bits == eb and sh.lanes >= per:
        return sh.kind[:, :per].copy(), sh.lo[:, :per].copy(), sh.hi[:, :per].copy(), sh.flags[:, :per].copy()
    lb = sh.lane_bits
    for s in range(per):
        a, b = s * eb, (s + 1) * eb
        lanes = [i for i in range(sh.lanes) if i * lb < b and (i + 1) * lb > a]
        bad = np.zeros(n, bool)
        for i in lanes:
            bad |= sh.kind[:, i] != EXACT
        kind[bad, s] = UNDEF
    return kind, lo, hi, fl


def _reg_shadow(kind, lo, hi, fl, eb: int) -> Shadow | None:
    if not kind.any():
        return None
    return Shadow(eb, kind.astype(np.uint8).copy(), lo.copy(), hi.copy(), fl.astype(np.uint8).copy())


def _regs_of(op, ins) -> list:
    if isinstance(op, Vec):
        return list(op.items)
    if isinstance(op, (Reg, Imm)):
        return [op]
    raise Unsupported.at(ins, f"operand {op} is not a register vector")


def _read_regs(m, f, ins, op, rtype: str):
    """Bits ``uint64[n, nregs]`` and shadows (list per register) of a register vector."""
    regs = _regs_of(op, ins)
    bits = np.zeros((m.n, len(regs)), np.uint64)
    shs = []
    for i, r in enumerate(regs):
        b, sh = m.read(f, r, rtype, ins)
        bits[:, i] = b
        shs.append(sh)
    return bits, shs


def _warps(m, act) -> list[int]:
    return [w for w in range((m.n + WARP - 1) // WARP) if act[w * WARP:(w + 1) * WARP].any()]


def _whole(m, act, w) -> bool:
    return (w + 1) * WARP <= m.n and bool(act[w * WARP:(w + 1) * WARP].all())


@dataclass
class _Tile:
    """One operand tile of one warp: bits and per-element shadow."""
    bits: np.ndarray
    kind: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    flags: np.ndarray


def _frag_tile(frag: WL.WarpFragment, bits: np.ndarray, shs: list, rows: slice) -> _Tile:
    """Scatter one warp's registers (and their shadows) through a fragment into a tile."""
    n = WARP
    eb, rb, per = frag.element_bits, frag.reg_bits, frag.per_register
    tile = WL.scatter(frag, bits[rows] & (U64(0xFFFFFFFF) if rb == 32 else U64(0xFFFFFFFFFFFFFFFF)))
    shape = tile.shape
    kind = np.zeros((n, frag.slots), np.uint8)
    lo = np.zeros((n, frag.slots))
    hi = np.zeros((n, frag.slots))
    fl = np.zeros((n, frag.slots), np.uint8)
    for i, sh in enumerate(shs):
        if sh is None:
            continue
        part = Shadow(sh.lane_bits, sh.kind[rows], sh.lo[rows], sh.hi[rows], sh.flags[rows])
        k, l_, h, fg = _elem_info(part, n, rb, eb)
        kind[:, i * per:(i + 1) * per] = k
        lo[:, i * per:(i + 1) * per] = l_
        hi[:, i * per:(i + 1) * per] = h
        fl[:, i * per:(i + 1) * per] = fg
    out = [np.zeros(shape[0] * shape[1], a.dtype) for a in (kind, lo, hi, fl)]
    idx = frag.flat().reshape(-1)
    for o, a in zip(out, (kind, lo, hi, fl)):
        o[idx] = a.reshape(-1)
    return _Tile(tile, *(o.reshape(shape) for o in out))


# ------------------------------------------------------------------ arithmetic with shadows


def _spec_dense(form, a_bits, b_bits, c_bits, scale_d: bool, op: str, keep=None):
    """``mma_dense`` in spec mode; with ``keep`` (mma.sp) unselected positions form no product."""
    def compute(bb):
        return MM.mma_dense(form, a_bits, bb, c_bits, scale_d=scale_d, op=op)

    if keep is None or form.btype not in F.FLOATS:
        return compute(b_bits)

    with np.errstate(invalid="ignore"):
        nf = ~np.isfinite(F.decode(form.btype, np.asarray(b_bits)))
    return spec_with_keep(compute, np.asarray(b_bits), nf, keep)


def _mma_with_shadows(form, a: _Tile, b: _Tile, c: _Tile, scale_d: bool, op: str, a_bad_rows=None,
                      mode: str = "spec", keep=None):
    """D bits and shadow (kind, lo, hi, flags) for one product; A/B/C tiles carry their shadows.

    ``mode="hardware"``: float forms get the H100's one result (``mma_math.hardware``, exact);
    elements whose C is itself a set keep the spec-mode widening (no one H100 result exists).
    ``keep`` (mma.sp): the metadata-selected positions of the expanded A.
    """
    if mode == "hardware" and form.dtype in ("f32", "f16") and form.atype != "b1":
        res = MM.mma_dense(form, a.bits, b.bits, c.bits, scale_d=scale_d, op=op, mode="hardware", keep=keep)
    else:
        res = _spec_dense(form, a.bits, b.bits, c.bits, scale_d, op, keep)
    hw = mode == "hardware" and not res.integer
    M, N = res.bits.shape
    integer = res.integer
    kind = np.full((M, N), EXACT if integer or hw else SET, np.uint8)
    lo, hi = np.array(res.lo, float), np.array(res.hi, float)
    flags = ((res.may_nan * MAY_NAN) | (res.may_pos_inf * MAY_POS_INF) | (res.may_neg_inf * MAY_NEG_INF)).astype(np.uint8)
    out_bits = np.asarray(res.bits)
    if scale_d:
        cset = c.kind == SET
        if cset.any():
            if integer:
                kind[cset] = UNDEF
            else:
                if hw:  # the set elements: spec mode's nominal result and set, widened below
                    sp = _spec_dense(form, a.bits, b.bits, c.bits, True, op, keep)
                    out_bits = np.where(cset, np.asarray(sp.bits).astype(out_bits.dtype), out_bits)
                    kind[cset] = SET
                    spf = ((sp.may_nan * MAY_NAN) | (sp.may_pos_inf * MAY_POS_INF)
                           | (sp.may_neg_inf * MAY_NEG_INF)).astype(np.uint8)
                    flags = np.where(cset, spf, flags).astype(np.uint8)
                    lo, hi = np.where(cset, sp.lo, lo), np.where(cset, sp.hi, hi)
                ct = form.ctype or form.dtype
                with np.errstate(invalid="ignore", over="ignore"):
                    c_lo = np.where(cset, F.encode(ct, np.nan_to_num(c.lo)).astype(np.uint64), c.bits)
                    c_hi = np.where(cset, F.encode(ct, np.nan_to_num(c.hi)).astype(np.uint64), c.bits)
                r1 = _spec_dense(form, a.bits, b.bits, c_lo, True, op, keep)
                r2 = _spec_dense(form, a.bits, b.bits, c_hi, True, op, keep)
                lo = np.where(cset, np.fmin(r1.lo, r2.lo), lo)
                hi = np.where(cset, np.fmax(r1.hi, r2.hi), hi)
                more = ((r1.may_nan | r2.may_nan) * MAY_NAN | (r1.may_pos_inf | r2.may_pos_inf) * MAY_POS_INF
                        | (r1.may_neg_inf | r2.may_neg_inf) * MAY_NEG_INF).astype(np.uint8)
                flags = np.where(cset, flags | more, flags).astype(np.uint8)
                kind[cset & ~(r1.finite_ok & r2.finite_ok)] = UNDEF
                kind[cset & (c.flags != 0)] = UNDEF
        kind[c.kind == UNDEF] = UNDEF
    bad_rows = (a.kind != EXACT).any(axis=1)
    if a_bad_rows is not None:
        bad_rows = bad_rows | a_bad_rows
    kind[bad_rows, :] = UNDEF
    kind[:, (b.kind != EXACT).any(axis=0)] = UNDEF
    return np.asarray(out_bits).astype(np.uint64), kind, lo, hi, flags


def _write_frag(m, f, ins, op, frag: WL.WarpFragment, tiles: dict[int, _Tile], act) -> None:
    """Gather each warp's D tile through ``frag`` and write the destination registers."""
    regs = _regs_of(op, ins)
    n, per, eb = m.n, frag.per_register, frag.element_bits
    bits = np.zeros((n, len(regs)), np.uint64)
    kind = np.full((n, len(regs), per), UNDEF, np.uint8)
    lo = np.zeros((n, len(regs), per))
    hi = np.zeros((n, len(regs), per))
    fl = np.zeros((n, len(regs), per), np.uint8)
    idx = frag.flat()
    for w in range((n + WARP - 1) // WARP):
        rows = slice(w * WARP, (w + 1) * WARP)
        t = tiles.get(w)
        if t is None:
            continue
        bits[rows] = WL.gather(frag, t.bits)
        for arr, src in ((kind, t.kind), (lo, t.lo), (hi, t.hi), (fl, t.flags)):
            arr[rows] = src.reshape(-1)[idx].reshape(WARP, len(regs), per)
    for i, r in enumerate(regs):
        m.write(f, r, bits[:, i], _reg_shadow(kind[:, i], lo[:, i], hi[:, i], fl[:, i], eb), act, ins)


# ------------------------------------------------------------------ mma.sync / mma.sp


def _form(ins, families: tuple[str, ...]):
    form = isa.form_for(ins)
    if form is None or form.family not in families:
        raise Unsupported.at(ins, f"not a {'/'.join(families)} form of the catalogue")
    if len(ins.operands) != len(form.operands):
        raise Unsupported.at(ins, f"{len(ins.operands)} operands, the form has {len(form.operands)}")
    return form, {spec.role: op for spec, op in zip(form.operands, ins.operands)}


def _reg_type(elem: str) -> str:
    return "b64" if elem == "f64" else "b32"


def _hardware_check(m, ins, form) -> None:
    """Hardware mode: refuse float forms with no H100 model (none on sm_90a now), never guess.

    Modelled and proved on the H100 (docs/numerics.md): mma/mma.sp f16/bf16/tf32, fp8
    mma/mma.sp and mma.m8n8k4 (ptxas's emulation), wmma.mma (its HMMA sequence) and sparse wgmma.
    Integer, b1 and f64 forms are exact or correctly rounded in both modes.
    """
    if m.mode != "hardware" or form.dtype not in ("f32", "f16"):
        return

    if form.family != "wgmma.sp":
        try:
            MM.hardware_family(form)
        except Unmodelled as e:
            raise Unsupported.at(ins, f"hardware mode: {e}; use spec mode") from None


def h_mma(m, f, ins, act):
    """``mma.sync`` and ``mma.sp`` (any metadata ordering qualifier)."""
    form, ops = _form(ins, ("mma", "mma.sp"))
    _hardware_check(m, ins, form)
    if not {form.atype, form.btype, form.ctype, form.dtype} <= set(isa.ELEMENT_BITS) or "kind" in form.opcode:
        raise Unsupported.at(ins, "mma .kind:: forms (sm_120a) are not modelled")
    sparse = form.family == "mma.sp"
    sh = form.shape
    la = WL.mma_a_layout(sh, form.atype, form.attr("layout_a", "row"), sparse)
    lb = WL.mma_b_layout(sh, form.btype, form.attr("layout_b", "col"))
    lc = WL.mma_c_layout(sh, form.ctype, form.atype)
    ld = WL.mma_c_layout(sh, form.dtype, form.atype)
    abits, ashs = _read_regs(m, f, ins, ops["a"], _reg_type(form.atype))
    bbits, bshs = _read_regs(m, f, ins, ops["b"], _reg_type(form.btype))
    cbits, cshs = _read_regs(m, f, ins, ops["c"], _reg_type(form.ctype))
    if sparse:
        mbits, msh = m.read(f, ops["sp_meta"], "b32", ins)
        sel = int(ops["sp_sel"].value)
        spec = S.spec_for(form)
    op = str(form.attr("op", ""))
    tiles: dict[int, _Tile] = {}
    for w in _warps(m, act):
        if not _whole(m, act, w):
            m.note(f"line {ins.loc.line if ins.loc else '?'}: {ins.base} executed by part of a warp (undefined)")
            continue
        rows = slice(w * WARP, (w + 1) * WARP)
        A, B, C = _frag_tile(la, abits, ashs, rows), _frag_tile(lb, bbits, bshs, rows), _frag_tile(lc, cbits, cshs, rows)
        bad_rows = keep = None
        if sparse:
            if sel not in spec.sel_values:
                m.note(f"{ins.opcode}: sparsity selector {sel} is undefined for this shape")
                continue
            fields, valid = S.decode_metadata(spec, mbits[rows], sel)
            if msh is not None:
                thread, _ = S.meta_position(spec, sel)
                valid = valid & ~msh.nonexact()[rows][thread]
            dense, bad_el = S.expand(spec, A.bits, fields, valid)
            keep = S.keep_mask(spec, fields)
            bad_rows = bad_el.any(axis=1) | (A.kind != EXACT).any(axis=1)
            A = _Tile(dense, np.zeros(dense.shape, np.uint8), np.zeros(dense.shape), np.zeros(dense.shape),
                      np.zeros(dense.shape, np.uint8))
        M, K, N = la.rows, sh.k, sh.n
        out = _Tile(np.zeros((lc.batches * M, N), np.uint64), np.zeros((lc.batches * M, N), np.uint8),
                    np.zeros((lc.batches * M, N)), np.zeros((lc.batches * M, N)), np.zeros((lc.batches * M, N), np.uint8))
        for p in range(lc.batches):  # Volta m8n8k4: four independent quad-pair products
            ra, rb_, rc = slice(p * M, (p + 1) * M), slice(p * K, (p + 1) * K), slice(p * M, (p + 1) * M)
            part = lambda t, r: _Tile(t.bits[r], t.kind[r], t.lo[r], t.hi[r], t.flags[r])  # noqa: E731
            res = _mma_with_shadows(form, part(A, ra), part(B, rb_), part(C, rc), True, op,
                                    None if bad_rows is None else bad_rows[ra], m.mode,
                                    None if keep is None else keep[ra])
            for arr, src in zip((out.bits, out.kind, out.lo, out.hi, out.flags), res):
                arr[rc] = src
        tiles[w] = out
    _write_frag(m, f, ins, ops["d"], ld, tiles, act)


# ------------------------------------------------------------------ memory helpers


def _space(form) -> str:
    sp = str(form.attr("space", "") or "")
    return "shared" if sp.startswith("shared") else ("global" if sp == "global" else "generic")


def _addresses(m, f, ins, a: Addr, act, what: str) -> np.ndarray:
    """Per-thread addresses (uint64 [n]); an undefined address in an active thread is undefined behaviour."""
    if not isinstance(a, Addr):
        raise Unsupported.at(ins, f"{what} operand is not an address")
    if a.base is None:
        return np.full(m.n, a.offset & ((1 << 64) - 1), np.uint64)
    if not isinstance(a.base, Reg):
        _, base = m.symbol(a.base.name, ins)
        return np.full(m.n, (base + a.offset) & ((1 << 64) - 1), np.uint64)
    bits, sh = m.read(f, a.base, "u64", ins)
    if sh is not None and (sh.nonexact() & act).any():
        raise Undefined(f"line {ins.loc.line if ins.loc else '?'}: {ins.base} through an undefined address")
    w = f.widths.get(a.base.name, 64)
    bits = bits & (U64((1 << w) - 1) if w < 64 else U64(0xFFFFFFFFFFFFFFFF))
    return bits + U64(a.offset & ((1 << 64) - 1))


def _read_bytes(m, ins, space: str, addrs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bytes at ``addrs`` (any shape) and whether each is undefined."""
    flat = addrs.reshape(-1).astype(np.uint64)
    vals = np.zeros(flat.size, np.uint64)
    bad = np.zeros(flat.size, bool)
    for region, pos, off in m.mem.resolve(space, flat, 1, ins, "load"):
        (b, sh), = region.read(off, 1, 1)
        vals[pos] = b
        if sh is not None:
            bad[pos] = sh.nonexact()
    return vals.reshape(addrs.shape), bad.reshape(addrs.shape)


def _write_elems(m, ins, space: str, addrs: np.ndarray, eb: int, bits: np.ndarray, kind, lo, hi, fl, writer: int):
    """Store elements of ``eb`` bytes (bits, shadows per element) at ``addrs``."""
    flat = addrs.reshape(-1).astype(np.uint64)
    b = bits.reshape(-1)
    k, l_, h, fg = (x.reshape(-1) for x in (kind, lo, hi, fl))
    for region, pos, off in m.mem.resolve(space, flat, eb, ins, "store"):
        if not region.writable:
            raise BadAddress.at(ins, f"store to read-only {region.space} memory ({region.name})")
        sh = None
        if k[pos].any():
            sh = Shadow(8 * eb, k[pos][:, None].astype(np.uint8), l_[pos][:, None], h[pos][:, None],
                        fg[pos][:, None].astype(np.uint8))
        region.write(off, eb, [(b[pos], sh)], np.full(pos.size, writer, np.int64))


# ------------------------------------------------------------------ ldmatrix / stmatrix


def _move_form(ins, family):
    form = isa.form_for(ins)
    if form is None or form.family != family:
        raise Unsupported.at(ins, f"not a {family} form of the catalogue")
    if form.attr("shape") != "m8n8":
        raise Unsupported.at(ins, f"{family} .{form.attr('shape')} (an sm_100a shape) is not modelled")
    return form


def _matrix_addresses(m, f, ins, form, a, act, w):
    """Byte addresses ``[num, 8 rows, 8 cols]`` of one warp's matrices (2-byte elements)."""
    num = int(form.attr("num"))
    addr = _addresses(m, f, ins, a, np.zeros(m.n, bool), ins.base)[w * WARP:w * WARP + 8 * num]
    if not _whole(m, act, w):
        return None
    base = addr.reshape(num, 8)
    if np.any(base % U64(16)):
        raise BadAddress.at(ins, f"{ins.base} row address {int(base[base % U64(16) != 0][0]):#x} is not 16-byte aligned")
    return base[:, :, None] + U64(2) * np.arange(8, dtype=np.uint64)[None, None, :]


def h_ldmatrix(m, f, ins, act):
    form = _move_form(ins, "ldmatrix")
    num, trans = int(form.attr("num")), bool(form.attr("trans"))
    frag = WL.ldmatrix_layout(num, trans)
    space = _space(form)
    a = ins.operands[1]
    used = np.zeros(m.n, bool)
    for w in _warps(m, act):
        used[w * WARP:w * WARP + 8 * num] = True
    _addresses(m, f, ins, a, used & act, ins.base)  # undefined row addresses: undefined behaviour
    tiles: dict[int, _Tile] = {}
    for w in _warps(m, act):
        addrs = _matrix_addresses(m, f, ins, form, a, act, w)
        if addrs is None:
            m.note(f"{ins.base} executed by part of a warp (undefined)")
            continue
        lo_b, bad0 = _read_bytes(m, ins, space, addrs)
        hi_b, bad1 = _read_bytes(m, ins, space, addrs + U64(1))
        bits = (lo_b | (hi_b << U64(8))).reshape(num * 8, 8)
        kind = np.where(bad0 | bad1, UNDEF, EXACT).astype(np.uint8).reshape(num * 8, 8)
        z = np.zeros(bits.shape)
        tiles[w] = _Tile(bits, kind, z, z, np.zeros(bits.shape, np.uint8))
    _write_frag(m, f, ins, ins.operands[0], frag, tiles, act)


def h_stmatrix(m, f, ins, act):
    form = _move_form(ins, "stmatrix")
    num, trans = int(form.attr("num")), bool(form.attr("trans"))
    frag = WL.ldmatrix_layout(num, trans)
    space = _space(form)
    a = ins.operands[0]
    bits, shs = _read_regs(m, f, ins, ins.operands[1], "b32")
    used = np.zeros(m.n, bool)
    for w in _warps(m, act):
        used[w * WARP:w * WARP + 8 * num] = True
    _addresses(m, f, ins, a, used & act, ins.base)
    for w in _warps(m, act):
        addrs = _matrix_addresses(m, f, ins, form, a, act, w)
        if addrs is None:
            raise Undefined(f"line {ins.loc.line if ins.loc else '?'}: stmatrix executed by part of a warp")
        t = _frag_tile(frag, bits, shs, slice(w * WARP, (w + 1) * WARP))
        _write_elems(m, ins, space, addrs.reshape(num * 8, 8), 2, t.bits, t.kind, t.lo, t.hi, t.flags, w * WARP)


# ------------------------------------------------------------------ wmma: opaque fragments


@dataclass(eq=False)
class Token:
    """What a wmma fragment holds: a logical matrix per warp (never its register layout)."""
    matrix: str  # a | b | c | d
    shape: object
    etype: str
    layout: str  # a/b: the load's layout; accumulators: "" (their fragment does not depend on it)
    tiles: dict = field(default_factory=dict)  # warp -> _Tile (logical rows x cols)


def _wmma_regs(f) -> dict:
    d = getattr(f, "_wmma_regs", None)
    if d is None:
        d = {}
        f._wmma_regs = d
    return d


def _dims(form, matrix: str) -> tuple[int, int]:
    s = form.shape
    return {"a": (s.m, s.k), "b": (s.k, s.n), "c": (s.m, s.n), "d": (s.m, s.n)}[matrix]


def _wmma_stride(m, f, ins, ops, w, default: int):
    st = ops.get("stride")
    if st is None:
        return default
    if isinstance(st, Imm):
        return int(st.value)
    bits, sh = m.read(f, st, "u32", ins)
    rows = slice(w * WARP, (w + 1) * WARP)
    if sh is not None and sh.nonexact()[rows].any():
        return None
    v = bits[rows] & U64(0xFFFFFFFF)
    return int(v[0]) if np.all(v == v[0]) else None


def _wmma_ops(ins, form):
    ops = {spec.role: op for spec, op in zip(form.operands, ins.operands)}
    if len(ins.operands) < len(form.operands) - (1 if form.operands[-1].optional else 0):
        raise Unsupported.at(ins, "too few operands")
    return ops


def _element_addresses(form, matrix, layout, p: int, stride: int):
    """Bit addresses ``[rows, cols]`` of a logical matrix stored row- or column-major."""
    rows, cols = _dims(form, matrix)
    eb = isa.ELEMENT_BITS[form.atype or form.btype or form.ctype or form.dtype]
    i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    lin = i * stride + j if layout == "row" else j * stride + i
    return p * 8 + lin * eb, eb


def _alignment(frag_bytes: int, default: int, eb: int) -> int:
    """Row alignment wmma needs: the fragment size (seed 002), except where the default stride
    itself is narrower (e.g. m8n32k16 A column-major: 16-byte columns, 32-byte fragment): the spec
    contradicts itself there, and the reference asks for the default row's size instead."""
    row = default * eb // 8
    return frag_bytes if row % frag_bytes == 0 else min(frag_bytes, row & -row)


def h_wmma_load(m, f, ins, act):
    form = isa.form_for(ins)
    if form is None or form.family != "wmma.load":
        raise Unsupported.at(ins, "not a wmma.load form of the catalogue")
    ops = _wmma_ops(ins, form)
    matrix, layout = str(form.attr("matrix")), str(form.attr("layout"))
    etype = form.atype or form.btype or form.ctype
    rows, cols = _dims(form, matrix)
    default = cols if layout == "row" else rows
    frag_bytes = form.operand("r").count * (8 if etype == "f64" else 4)
    space = _space(form)
    tok = Token(matrix, form.shape, etype, layout if matrix in ("a", "b") else "")
    addr = _addresses(m, f, ins, ops["addr"], act, "wmma.load")
    for w in _warps(m, act):
        rs = slice(w * WARP, (w + 1) * WARP)
        if not _whole(m, act, w):
            continue
        p = addr[rs]
        stride = _wmma_stride(m, f, ins, ops, w, default)
        if not np.all(p == p[0]) or stride is None:
            m.note("wmma.load: address or stride differs across the warp (undefined)")
            continue
        if stride < default:
            m.note(f"wmma.load: stride {stride} below the default {default} (undefined)")
            continue
        p0 = int(p[0])
        eb = isa.ELEMENT_BITS[etype]
        need = _alignment(frag_bytes, default, eb)
        if p0 % need or (stride * eb // 8) % need:
            raise BadAddress.at(ins, f"wmma.load at {p0:#x} with stride {stride}: rows not aligned to "
                                     f"{need} bytes")
        bitaddr, eb = _element_addresses(form, matrix, layout, p0, stride)
        nbytes = max(eb // 8, 1)
        byte0 = (bitaddr // 8).astype(np.uint64)
        val = np.zeros(bitaddr.shape, np.uint64)
        bad = np.zeros(bitaddr.shape, bool)
        for i in range(nbytes):
            b, bd = _read_bytes(m, ins, space, byte0 + U64(i))
            val |= b << U64(8 * i)
            bad |= bd
        if eb < 8:
            val = (val >> (bitaddr % 8).astype(np.uint64)) & U64((1 << eb) - 1)
        z = np.zeros(val.shape)
        tok.tiles[w] = _Tile(val, np.where(bad, UNDEF, EXACT).astype(np.uint8), z, z.copy(),
                             np.zeros(val.shape, np.uint8))
    _bind(m, f, ins, ops["r"], tok, act)


def _bind(m, f, ins, op, tok: Token, act) -> None:
    """Write UNDEF bits to the fragment registers and remember which token they hold."""
    table = _wmma_regs(f)
    for i, r in enumerate(_regs_of(op, ins)):
        w = f.widths.get(r.name, 32)
        m.write(f, r, np.zeros(m.n, np.uint64), Shadow.undef(m.n, w), act, ins)
        table[r.name] = (tok, i, f.regs[r.name])


def _token(f, ins, op, matrices: tuple[str, ...]):
    """The token a register vector holds (every register, in order), else None."""
    table = _wmma_regs(f)
    regs = _regs_of(op, ins)
    tok = None
    for i, r in enumerate(regs):
        e = table.get(getattr(r, "name", None))
        if e is None or e[1] != i or f.regs.get(r.name) is not e[2]:
            return None
        if tok is None:
            tok = e[0]
        elif e[0] is not tok:
            return None
    if tok is None or tok.matrix not in matrices:
        return None
    return tok


def h_wmma_mma(m, f, ins, act):
    form = isa.form_for(ins)
    if form is None or form.family != "wmma.mma":
        raise Unsupported.at(ins, "not a wmma.mma form of the catalogue")
    _hardware_check(m, ins, form)
    ops = {spec.role: op for spec, op in zip(form.operands, ins.operands)}
    ta, tb = _token(f, ins, ops["a"], ("a",)), _token(f, ins, ops["b"], ("b",))
    tc = _token(f, ins, ops["c"], ("c", "d"))
    ok = (ta is not None and tb is not None and tc is not None and ta.shape == form.shape == tb.shape == tc.shape
          and ta.etype == form.atype and tb.etype == form.btype and tc.etype == form.ctype
          and ta.layout == form.attr("layout_a") and tb.layout == form.attr("layout_b"))
    if not ok:
        m.note(f"line {ins.loc.line if ins.loc else '?'}: wmma.mma operands are not matching wmma fragments (undefined)")
    out = Token("d", form.shape, form.dtype, "")
    op = str(form.attr("op", ""))
    for w in _warps(m, act):
        if not ok or not _whole(m, act, w) or any(w not in t.tiles for t in (ta, tb, tc)):
            continue
        res = _mma_with_shadows(form, ta.tiles[w], tb.tiles[w], tc.tiles[w], True, op, mode=m.mode)
        out.tiles[w] = _Tile(*res)
    _bind(m, f, ins, ops["d"], out, act)


def h_wmma_store(m, f, ins, act):
    form = isa.form_for(ins)
    if form is None or form.family != "wmma.store":
        raise Unsupported.at(ins, "not a wmma.store form of the catalogue")
    ops = _wmma_ops(ins, form)
    layout = str(form.attr("layout"))
    rows, cols = _dims(form, "d")
    default = cols if layout == "row" else rows
    etype = form.dtype
    eb = isa.ELEMENT_BITS[etype]
    frag_bytes = form.operand("r").count * (8 if etype == "f64" else 4)
    tok = _token(f, ins, ops["r"], ("c", "d"))
    if tok is not None and (tok.shape != form.shape or tok.etype != etype):
        tok = None
    space = _space(form)
    addr = _addresses(m, f, ins, ops["addr"], act, "wmma.store")
    for w in _warps(m, act):
        rs = slice(w * WARP, (w + 1) * WARP)
        p = addr[rs]
        stride = _wmma_stride(m, f, ins, ops, w, default)
        if not _whole(m, act, w) or not np.all(p == p[0]) or stride is None or stride < default:
            raise Undefined(f"line {ins.loc.line if ins.loc else '?'}: wmma.store with a partial warp, "
                            "non-uniform address/stride or a stride below the default")
        p0 = int(p[0])
        need = _alignment(frag_bytes, default, eb)
        if p0 % need or (stride * eb // 8) % need:
            raise BadAddress.at(ins, f"wmma.store at {p0:#x} with stride {stride}: rows not aligned to "
                                     f"{need} bytes")
        bitaddr, _ = _element_addresses(form, "d", layout, p0, stride)
        t = tok.tiles.get(w) if tok is not None else None
        if t is None:
            m.note("wmma.store of registers that hold no matching wmma fragment (undefined values)")
            z = np.zeros((rows, cols))
            t = _Tile(np.zeros((rows, cols), np.uint64), np.full((rows, cols), UNDEF, np.uint8), z, z,
                      np.zeros((rows, cols), np.uint8))
        _write_elems(m, ins, space, (bitaddr // 8).astype(np.uint64), eb // 8, t.bits, t.kind, t.lo, t.hi,
                     t.flags, w * WARP)


# ------------------------------------------------------------------ wgmma.mma_async.sp


def h_wgmma_sp(m, f, ins, act):
    """``wgmma.mma_async.sp``: wgmma_exec's dense model with A expanded from packed A + metadata."""
    form = isa.form_for(ins)
    if form is None or form.family != "wgmma.sp":
        raise Unsupported.at(ins, "not a sparse wgmma.mma_async form of the catalogue")
    _hardware_check(m, ins, form)
    ops, d_names, a_names = WX.operands(m, ins, form)
    shape = form.shape
    M, N, K = shape.m, shape.n, shape.k
    spec = S.spec_for(form)
    acc = L.accumulator_layout(form.dtype, N)
    sel = int(ops["sp_sel"].value)
    mbits, msh = m.read(f, ops["sp_meta"], "b32", ins)
    WG = L.WARPGROUP
    for g in m.wg.active_groups(act):
        WX.require_whole_warpgroup(m, ins, g)
        st = m.wg.groups[g]
        rows = slice(g * WG, (g + 1) * WG)
        reasons: list[str] = []
        if not act[rows].all():
            reasons.append("executed by part of a warpgroup")
        if not st.fenced:
            reasons.append("no wgmma.fence before the first wgmma")
        used = set(d_names) | set(a_names)
        if st.touched & used:
            reasons.append(f"register {sorted(st.touched & used)[0]} accessed since the last wgmma.fence")
        if WX.shape_conflict(st, d_names, shape):
            reasons.append("accumulators shared with a wgmma of another shape without a fence")
        if sel not in spec.sel_values:
            reasons.append(f"sparsity selector {sel} (defined: {spec.sel_values})")
        scale_d, sa, sb, ta, tb = WX.operand_scalars(m, f, ops, rows, ins, reasons)
        c_tile, CK, CLO, CHI, CFL = WX.c_operand(m, f, st, scale_d, d_names, rows, acc, M, N)
        # packed A (M x K/2): the dense fragment / shared layout of the packed matrix
        if "a" in ops:
            al = L.a_fragment_layout(form.atype)
            abits, ashs = WX._reg_matrix(m, f, st, a_names, rows, 32)
            packed = L.scatter(al, abits.astype(np.uint32))
            p_bad = WX._a_bad(al, ashs)
        else:
            dv = WX._uniform(m, f, ops["a_desc"], rows, ins, "A descriptor")
            if dv is None:
                reasons.append("A descriptor is undefined or not uniform")
                dv = 0
            desc = MatrixDescriptor.decode(dv)
            reasons += WX.descriptor_reasons(m, desc, "A")
            lay = desc.smem_layout("MN" if ta else "K", isa.ELEMENT_BITS[form.atype])
            t = _smem_tile_checked(WX, m, ins, lay, M, K // 2)
            packed, p_bad = t.bits, t.bad
        fields, valid = S.decode_metadata(spec, mbits[rows], sel if sel in spec.sel_values else 0)
        if msh is not None:
            thread, _ = S.meta_position(spec, sel if sel in spec.sel_values else 0)
            valid = valid & ~msh.nonexact()[rows][thread]
        if not valid.all():
            m.note(f"line {ins.loc.line if ins.loc else '?'}: wgmma.sp metadata the spec calls invalid (undefined rows)")
        dense, bad_el = S.expand(spec, packed, fields, valid)
        a_bad_rows = p_bad.any(axis=1) | bad_el.any(axis=1)
        dv = WX._uniform(m, f, ops["b_desc"], rows, ins, "B descriptor")
        if dv is None:
            reasons.append("B descriptor is undefined or not uniform")
            dv = 0
        desc = MatrixDescriptor.decode(dv)
        reasons += WX.descriptor_reasons(m, desc, "B")
        lay = desc.smem_layout("MN" if tb else "K", isa.ELEMENT_BITS[form.btype])
        bt = _smem_tile_checked(WX, m, ins, lay, N, K)
        b_tile, b_bad = bt.bits.T.copy(), bt.bad.T
        keep = S.keep_mask(spec, fields)
        a32 = dense.astype(np.uint32)
        spec_res = lambda c_: _wgmma_sp_spec(form, a32, b_tile, c_, bool(scale_d), sa, sb, keep)  # noqa: E731
        hw = m.mode == "hardware" and form.dtype != "s32"
        cols = None
        if not (scale_d and (CK == SET).any()):  # a value-set C widens over the whole tile below
            obs = observed.observed_d(f.info, ins)
            cols = None if obs is None else observed.columns(acc, d_names, obs)
        if cols is not None:  # only the columns of D anything reads (observed.py)
            narrow = _replace(form, shape=_replace(shape, n=int(cols.size)))
            bn, cn = b_tile[:, cols], c_tile[:, cols]
            part = (wgmma_dense(narrow, a32, bn, cn, bool(scale_d), sa, sb, mode="hardware", keep=keep) if hw
                    else _wgmma_sp_spec(narrow, a32, bn, cn, bool(scale_d), sa, sb, keep))
            res = observed.embed(part, cols, N)
        elif hw:  # the H100's one result (docs/numerics.md: proved for sparse wgmma)
            res = wgmma_dense(form, a32, b_tile, c_tile, bool(scale_d), sa, sb, mode="hardware", keep=keep)
        else:
            res = spec_res(c_tile)
        integer = WX._is_int(res)
        kind = np.full((M, N), EXACT if integer or hw else SET, np.uint8)
        lo, hi = res.lo.copy(), res.hi.copy()
        flags = ((res.may_nan * MAY_NAN) | (res.may_pos_inf * MAY_POS_INF) | (res.may_neg_inf * MAY_NEG_INF)).astype(np.uint8)
        out_tile = res.bits
        if scale_d:
            cset = CK == SET
            if cset.any() and not integer:
                if hw:  # a set C: no one H100 result; those elements keep spec mode's widening
                    m.note(f"line {ins.loc.line if ins.loc else '?'}: wgmma.sp in hardware mode with "
                           f"{int(cset.sum())} accumulator element(s) already a value set: spec-mode widening used")
                    sp = spec_res(c_tile)
                    out_tile = np.where(cset, sp.bits, res.bits).astype(np.uint32)
                    kind[cset] = SET
                    spf = ((sp.may_nan * MAY_NAN) | (sp.may_pos_inf * MAY_POS_INF)
                           | (sp.may_neg_inf * MAY_NEG_INF)).astype(np.uint8)
                    lo, hi = np.where(cset, sp.lo, lo), np.where(cset, sp.hi, hi)
                    flags = np.where(cset, spf, flags).astype(np.uint8)
                    res = sp
                dform = _replace(form, shape=shape)
                lo, hi, flags = _widen_sparse(WX, dform, a32, b_tile, c_tile, CLO, CHI, cset,
                                              sa, sb, res, lo, hi, flags, keep)
                kind[(CFL != 0) & cset] = UNDEF
            kind[CK == UNDEF] = UNDEF
            if integer:
                kind[CK == SET] = UNDEF
        kind[a_bad_rows, :] = UNDEF
        kind[:, b_bad.any(axis=0)] = UNDEF
        if reasons:
            kind[:] = UNDEF
            for r in reasons:
                m.note(f"line {ins.loc.line if ins.loc else '?'}: wgmma.sp {r} (undefined)")
        out_bits = L.gather(acc, out_tile)
        shadows = WX._reg_shadows(acc, kind, lo, hi, flags)
        p = WX.Pending(f, g, d_names, out_bits, shadows, a_names)
        st.uncommitted.append(p)
        st.inflight.update(dict.fromkeys(d_names + a_names, p))
        st.acc_shape.update(dict.fromkeys(d_names, shape))


def _widen_sparse(WX, form, a32, b_tile, c_tile, clo, chi, cset, sa, sb, res, lo, hi, flags, keep):
    """``wgmma_exec._widen_for_c`` for a sparse product: as in ``_wgmma_sp_spec``, a B entry that is
    Inf/NaN at a position a row did not select is never multiplied, so it is zeroed for that row
    (rows grouped by their selection pattern over B's non-finite rows), else the widened set of a
    chained sparse wgmma would be NaN-only where the H100 gives a finite value."""
    nf = None
    if form.btype in F.FLOATS:
        with np.errstate(invalid="ignore"):
            nf = ~np.isfinite(F.decode(form.btype, b_tile))
    if nf is None or not nf.any():
        return WX._widen_for_c(form, a32, b_tile, c_tile, clo, chi, cset, sa, sb, res, lo, hi, flags)
    krows = np.nonzero(nf.any(axis=1))[0]
    groups: dict[bytes, list[int]] = {}
    for r in range(keep.shape[0]):
        groups.setdefault(keep[r, krows].tobytes(), []).append(r)
    out_lo, out_hi, out_fl = np.array(lo, copy=True), np.array(hi, copy=True), np.array(flags, copy=True)
    for rows in groups.values():
        zero = nf & ~keep[rows[0]][:, None]
        bb = np.where(zero, 0, b_tile).astype(b_tile.dtype)
        l_, h_, f_ = WX._widen_for_c(form, a32, bb, c_tile, clo, chi, cset, sa, sb, res, lo, hi, flags)
        out_lo[rows], out_hi[rows], out_fl[rows] = l_[rows], h_[rows], f_[rows]
    return out_lo, out_hi, out_fl.astype(np.uint8)


def _wgmma_sp_spec(form, a32, b_tile, c_tile, scale_d: bool, sa: int, sb: int, keep):
    """Spec-mode sparse wgmma: unselected positions form no product (``wgmma_math.spec_with_keep``)."""
    sums: dict = {}  # B variants (non-finite entries zeroed) share the A·B products (wgmma_math._reuse_sums)

    def compute(bb):
        return wgmma_dense(form, a32, bb, c_tile, scale_d, sa, sb, mode="spec", sums_cache=sums)

    if form.btype not in F.FLOATS:
        return compute(b_tile)
    with np.errstate(invalid="ignore"):
        nf = ~np.isfinite(F.decode(form.btype, b_tile))
    return spec_with_keep(compute, b_tile, nf, keep)


def _smem_tile_checked(WX, m, ins, lay, mn: int, k: int):
    try:
        return WX._smem_tile(m, ins, lay, mn, k)
    except ValueError as e:  # e.g. a K-major swizzled tile narrower than one instruction's K
        raise Unsupported.at(ins, f"shared-memory operand: {e}") from None


# ------------------------------------------------------------------ dispatch

HANDLERS: dict[str, object] = {
    "wgmma.mma_async.sp": h_wgmma_sp,
    "mma.sync": h_mma,
    "mma.sp": h_mma,
    "wmma.load": h_wmma_load,
    "wmma.store": h_wmma_store,
    "wmma.mma": h_wmma_mma,
    "ldmatrix": h_ldmatrix,
    "stmatrix": h_stmatrix,
}
_ORDER = sorted(HANDLERS, key=len, reverse=True)
BASES = frozenset(k.split(".")[0] for k in HANDLERS)  # cheap pre-filter for the dispatch hook


def handler_for(ins):
    """The handler for ``ins`` by longest opcode prefix (at a '.' boundary), or None."""
    if ins.base not in BASES:
        return None
    op = ins.opcode
    for key in _ORDER:
        if op == key or op.startswith(key + ".") or op.startswith(key + "::"):
            return HANDLERS[key]
    return None


@contextlib.contextmanager
def install():
    """Route the interpreter's dispatch through ``handler_for`` first (``dispatch.FIRST``)."""
    dispatch.FIRST.append(handler_for)
    try:
        yield
    finally:
        dispatch.FIRST.remove(handler_for)
