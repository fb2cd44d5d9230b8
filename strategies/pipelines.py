"""wgmma pipeline plans: accumulator sets (units), stages, waits, and legal register access.

A *unit* is one accumulator set with the one form that accumulates into it (so
every wgmma on it has the same shape: the spec's in-flight chaining rule), its
shared-memory tiles and A source.  A *script* is a sequence of ops over units:

  Stage(mmas)  -> wgmma.fence; wgmma.mma_async...; wgmma.commit_group
  Wait(n)      -> wgmma.wait_group n
  Touch(unit)  -> a register write to the unit's accumulators between stages

``PipeState`` tracks which groups are in flight so generated scripts are legal
by construction: a Touch only of accumulators no pending group writes; the
epilogue waits for everything before storing.
"""
from __future__ import annotations

from dataclasses import dataclass

from hypothesis import event, strategies as st

from fuzzptx.isa import Form
from fuzzptx.isa.wgmma import d_register_count

from .descriptors import SmemTile, descriptors
from .instructions import WGMMA_FAMILIES, forms
from .operands import immediates, pick, register_types, sparse_metadata

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


@dataclass(frozen=True)
class Wait:
    n: int


@dataclass(frozen=True)
class Touch:
    unit: int


@dataclass(frozen=True)
class PipeState:
    """Groups in flight, oldest first, each the set of units its wgmmas write."""

    pending: tuple[frozenset[int], ...] = ()

    def busy(self) -> frozenset[int]:
        out: frozenset[int] = frozenset()
        for g in self.pending:
            out |= g
        return out

    def after(self, op) -> "PipeState":
        if isinstance(op, Stage):
            return PipeState(self.pending + (frozenset(m.unit for m in op.mmas),))
        if isinstance(op, Wait):
            return PipeState(self.pending[len(self.pending) - op.n:] if op.n else ())
        return self

    def join(self, other: "PipeState") -> "PipeState":
        """A conservative state after two paths meet: the longer list, every busy unit kept busy."""
        longer, shorter = (self, other) if len(self.pending) >= len(other.pending) else (other, self)
        extra = shorter.busy() - longer.busy()
        if not longer.pending:
            return longer
        return PipeState(longer.pending[:-1] + (longer.pending[-1] | extra,))


# ------------------------------------------------------------------ strategies


@st.composite
def units(draw, *, max_d_regs: int = 128, allow_mn_major: bool = True) -> Unit:
    """A unit: a wgmma form (uniform over dense and sparse forms), its tiles and register types."""
    # Family first (dense, then sparse), then uniform over that family's forms: two short
    # lists suffer less from Hypothesis re-using earlier choices than one long list.
    family = draw(pick(WGMMA_FAMILIES, width=2))
    form = draw(forms(family, max_d_regs=max_d_regs))
    shape = form.shape
    sparse = form.family == "wgmma.sp"
    # Every draw below happens for every form (unused ones are dropped), so the shrinker
    # can replace the form by a simpler one without shifting the other choices.
    slices = draw(st.integers(1, 2))
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


@st.composite
def mmas(draw, unit_index: int, unit: Unit, *, in_loop: bool = False) -> Mma:
    """One wgmma on a unit: which K-slice, scale-d (immediate or predicate), negations."""
    kinds = (1, 0, "param", "loop") if in_loop else (1, 0, "param")
    scale_d = draw(st.sampled_from(kinds))
    event(f"scale_d={scale_d}")
    neg = unit.form.has_operand("imm_scale_a")
    sa, sb = draw(st.sampled_from((1, -1))), draw(st.sampled_from((1, -1)))
    if not neg:
        sa = sb = 1
    else:  # the catalogue's values, in the drawn preference
        sa = sa if sa in unit.form.operand("imm_scale_a").values else 1
        sb = sb if sb in unit.form.operand("imm_scale_b").values else 1
    return Mma(unit_index, draw(st.integers(0, unit.slices - 1)), scale_d, sa, sb)


@st.composite
def stages(draw, us: tuple[Unit, ...], *, in_loop: bool = False) -> Stage:
    """fence, one or more wgmma on one or more accumulator sets, commit."""
    n = draw(st.integers(1, 3))
    picks = [draw(st.integers(0, len(us) - 1)) for _ in range(n)]
    return Stage(tuple(draw(mmas(i, us[i], in_loop=in_loop)) for i in picks))


__all__ = ["Unit", "Mma", "Stage", "Wait", "Touch", "PipeState", "units", "mmas", "stages", "M"]
