"""wgmma pipeline plans: accumulator sets (units), stages, waits, and legal register access.

A *unit* is one accumulator set with the one form that accumulates into it (so
every wgmma on it has the same shape: the spec's in-flight chaining rule), its
shared-memory tiles and A source.  A *script* is a sequence of ops over units:

  Stage(mmas)  -> wgmma.fence; wgmma.mma_async...; wgmma.commit_group
                  (fresh_a: first load the register-A fragments into new registers)
  Wait(n)      -> wgmma.wait_group n
  Touch(unit)  -> a register write to the unit's accumulators between stages

``PipeState`` tracks which groups are in flight so generated scripts are legal
by construction: a Touch only of accumulators no pending group writes; the
epilogue waits for everything before storing.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from hypothesis import event, strategies as st

from fuzzptx import isa
from fuzzptx.isa import Form
from fuzzptx.isa.wgmma import d_register_count

from .descriptors import SmemTile, descriptors
from .instructions import WGMMA_FAMILIES, forms
from .operands import immediates, ints, pick, register_types, sparse_metadata

M = 64  # every wgmma shape is m64


@dataclass(frozen=True)
class Unit:
    """One accumulator set and how its wgmma reads A and B."""

    form: Form
    b_tile: SmemTile  # N x (K * slices)
    a_tile: SmemTile | None  # M x (K_a * slices) when A comes by descriptor
    slices: int  # K-slices the tiles hold (an op picks one)
    d_type: str  # register type of the accumulators
    a_type: str | None  # register type of A fragments (A in registers)
    meta: int | None = None  # sparse metadata word
    sp_sel: int | None = None

    @property
    def d_count(self) -> int:
        return d_register_count(self.form.dtype, self.form.shape.n)

    @property
    def a_k(self) -> int:
        """K extent of A as stored: K, or K/2 for sparse (A is packed)."""
        k = self.form.shape.k
        return k // 2 if self.form.family == "wgmma.sp" else k


@dataclass(frozen=True)
class Mma:
    unit: int
    slice: int = 0
    scale_d: object = 1  # 1, 0, "param" (predicate from a kernel param) or "loop" (iteration != 0)
    scale_a: int = 1
    scale_b: int = 1


@dataclass(frozen=True)
class Stage:
    mmas: tuple[Mma, ...]
    fresh_a: bool = False  # A fragments loaded into new registers before the fence (register-A units)


@dataclass(frozen=True)
class Wait:
    n: int


@dataclass(frozen=True)
class Touch:
    unit: int


#: The largest N the catalogue allows in wgmma.wait_group N.
MAX_WAIT_N = max(isa.forms("wgmma.wait_group")[0].operand("n").values)
#: Groups tracked one by one: any wait_group (N <= MAX_WAIT_N) retires all older ones.
TRACKED_GROUPS = MAX_WAIT_N + 1


@dataclass(frozen=True)
class PipeState:
    """Groups that may be in flight, oldest first, each the set of units its wgmmas write.

    A state may stand for several paths (``join``): lists are aligned at the newest group,
    since ``wait_group N`` keeps the newest N of each.  Groups past ``TRACKED_GROUPS``
    merge into the oldest tracked one, so loop fixpoints end.
    """

    pending: tuple[frozenset[int], ...] = ()

    def busy(self) -> frozenset[int]:
        out: frozenset[int] = frozenset()
        for g in self.pending:
            out |= g
        return out

    def after(self, op) -> "PipeState":
        if isinstance(op, Stage):
            pending = self.pending + (frozenset(m.unit for m in op.mmas),)
            if len(pending) > TRACKED_GROUPS:
                pending = (pending[0] | pending[1],) + pending[2:]
            return PipeState(pending)
        if isinstance(op, Wait):
            return PipeState(self.pending[len(self.pending) - op.n:] if op.n else ())
        return self

    def join(self, other: "PipeState") -> "PipeState":
        """The state after two paths meet: position by position from the newest group, the
        units either path may have there (the longer list's length)."""
        a, b = self.pending, other.pending
        n = max(len(a), len(b))
        a = (frozenset(),) * (n - len(a)) + a
        b = (frozenset(),) * (n - len(b)) + b
        return PipeState(tuple(x | y for x, y in zip(a, b)))


# ------------------------------------------------------------------ strategies


def units(*, max_d_regs: int = 128, allow_mn_major: bool = True) -> st.SearchStrategy[Unit]:
    """A unit: a wgmma form (uniform over dense and sparse forms), its tiles and register types."""
    return _units(max_d_regs, allow_mn_major)


@functools.lru_cache(maxsize=None)
def _units(max_d_regs: int, allow_mn_major: bool) -> st.SearchStrategy[Unit]:
    return _draw_unit(max_d_regs=max_d_regs, allow_mn_major=allow_mn_major)


@st.composite
def _draw_unit(draw, *, max_d_regs: int = 128, allow_mn_major: bool = True) -> Unit:
    """A unit: a wgmma form (uniform over dense and sparse forms), its tiles and register types."""
    # Family first (dense, then sparse), then uniform over that family's forms: two short
    # lists suffer less from Hypothesis re-using earlier choices than one long list.
    family = draw(pick(WGMMA_FAMILIES, width=2))
    form = draw(forms(family, max_d_regs=max_d_regs))
    shape = form.shape
    sparse = form.family == "wgmma.sp"
    # Every draw below happens for every form (unused ones are dropped), so the shrinker
    # can replace the form by a simpler one without shifting the other choices.
    slices = draw(ints(1, 2))
    trans_b = form.has_operand("imm_trans_b") and allow_mn_major
    b_tile = draw(descriptors(form.btype, shape.n, shape.k, slices=slices, allow_mn_major=trans_b))
    trans_a = form.has_operand("imm_trans_a") and allow_mn_major
    a_k = shape.k // 2 if sparse else shape.k
    a_tile = draw(descriptors(form.atype, M, a_k, slices=slices, allow_mn_major=trans_a))
    a_spec = form.operand("a") if form.has_operand("a") else form.operand("b_desc")
    a_type = draw(register_types(a_spec, form))
    if form.a_source == "desc":
        a_type = None
    else:
        a_tile = None
    d_type = draw(register_types(form.operand("d")))
    meta = draw(sparse_metadata(form.atype))
    sel_spec = form.operand("sp_sel") if sparse else None
    sp_sel = draw(immediates(sel_spec, form)) if sparse else None
    if not sparse:
        meta = None
    event(f"a_source={form.a_source}")
    event(f"family={form.family}")
    event(f"shape={shape}")
    event(f"type={form.atype}.{form.btype}->{form.dtype}")
    return Unit(form, b_tile, a_tile, slices, d_type, a_type, meta, sp_sel)


def mmas(unit_index: int, unit: Unit, *, in_loop: bool = False) -> st.SearchStrategy[Mma]:
    """One wgmma on a unit: which K-slice, scale-d (immediate or predicate), negations."""
    return st.composite(lambda draw: _draw_mma(draw, unit_index, unit, in_loop))()


def _draw_mma(draw, unit_index: int, unit: Unit, in_loop: bool) -> Mma:
    neg = unit.form.has_operand("imm_scale_a")
    sa_ok = unit.form.operand("imm_scale_a").values if neg else (1,)
    sb_ok = unit.form.operand("imm_scale_b").values if neg else (1,)
    return _mma(draw(_mma_codes(in_loop)), unit_index, unit.slices, in_loop, sa_ok, sb_ok)


_SCALE_D = {False: (1, 0, "param"), True: (1, 0, "param", "loop")}


@functools.lru_cache(maxsize=None)
def _mma_codes(in_loop: bool) -> st.SearchStrategy[int]:
    # (scale-d kind, scale-a, scale-b, K-slice) as mixed-radix digits of one draw, the
    # simplest (scale-d 1, no negation, slice 0) at 0.
    return ints(0, len(_SCALE_D[in_loop]) * 8 - 1)


def _mma(i: int, unit_index: int, slices: int, in_loop: bool, sa_ok, sb_ok) -> Mma:
    scale_d = _SCALE_D[in_loop][i // 8]
    event(f"scale_d={scale_d}")
    sa, sb = (1, -1)[i // 4 % 2], (1, -1)[i // 2 % 2]
    # the catalogue's values, in the drawn preference
    sa = sa if sa in sa_ok else 1
    sb = sb if sb in sb_ok else 1
    return Mma(unit_index, i % 2 % slices, scale_d, sa, sb)


@st.composite
def stages(draw, us: tuple[Unit, ...], *, in_loop: bool = False) -> Stage:
    """fence, one or more wgmma on one or more accumulator sets, commit."""
    n = draw(ints(1, 3))
    picks = [draw(ints(0, len(us) - 1)) for _ in range(n)]
    return Stage(tuple(_draw_mma(draw, i, us[i], in_loop) for i in picks))


__all__ = ["Unit", "Mma", "Stage", "Wait", "Touch", "PipeState", "MAX_WAIT_N", "TRACKED_GROUPS", "units", "mmas", "stages", "M"]
