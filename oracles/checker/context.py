"""Per-function facts every pipeline analysis shares, computed once."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, NamedTuple

from fuzzptx.perf import per_object
from fuzzptx.program import TensorMap
from fuzzptx.ptx.ir import Function, Instr, Module

from .flow import Graph, analyse, build_cfg
from .regs import defs_uses, is_wgmma, wgmma_regs, wgmma_shape
from .uniformity import CTA, Uniformity, analyse_uniformity, branch_reg


class Site(NamedTuple):
    """Where an instruction sits: block and position (instructions repeat textually, sites do not)."""

    block: int
    pos: int


@dataclass
class FnCtx:
    module: Module
    fn: Function
    g: Graph
    wgmmas: dict  # Site -> Instr
    relevant: frozenset  # registers that are accumulators or A fragments of some wgmma
    items: dict = field(default_factory=dict)  # block -> ((site, instr), ...)
    hot: dict = field(default_factory=dict)  # block -> the items any pipeline analysis reacts to
    tensormaps: dict = field(default_factory=dict)  # kernel parameter -> its TensorMap (the program's header)
    _uni: Uniformity | None = None
    _ptxas_uni: Uniformity | None = None

    @property
    def uni(self) -> Uniformity:
        """The spec's uniformity levels, computed when a rule first asks: most functions' rules
        never do (of the 110 functions of 96 programs of ``fuzzptx run --seed 0``, 35 asked)."""
        if self._uni is None:
            self._uni = analyse_uniformity(self.fn, self.g, preamble=self.module.preamble, module=self.module)
        return self._uni

    def instr(self, site: Site) -> Instr:
        return self.g.blocks[site.block].instrs[site.pos]

    def line(self, site: Site) -> int | None:
        loc = self.instr(site).loc
        return loc.line if loc else None

    def ctrl_deps(self, site: Site) -> frozenset:
        """Control-dependence keys of an instruction: its block's, plus its guard (register, sense)."""
        deps = set(self.g.cdeps[site.block])
        ins = self.instr(site)
        if ins.guard is not None:
            deps.add(("guard", ins.guard.reg.name, ins.guard.negated))
        return frozenset(deps)

    def dep_divergent(self, dep, ptxas: bool = False) -> bool:
        """Whether a control dependence is divergent (by the spec's measure, or by ptxas's)."""
        uni = self.ptxas_uni() if ptxas else self.uni
        if dep[0] == "guard":
            return uni.regs.get(dep[1], CTA) < uni.threshold
        return dep in uni.divergent_edges

    def ptxas_uni(self) -> Uniformity:
        if self._ptxas_uni is None:
            self._ptxas_uni = analyse_uniformity(self.fn, self.g, "ptxas")
        return self._ptxas_uni

    def dep_text(self, dep) -> str:
        """Human words for one control dependence: the branch or guard and its line."""
        if dep[0] == "guard":
            return f"guard {'!' if dep[2] else ''}{dep[1]}"
        blk = self.g.blocks[dep[0]]
        last = blk.instrs[-1] if blk.instrs else None
        reg = branch_reg(blk)
        where = f" at line {last.loc.line}" if last is not None and last.loc else ""
        return f"branch on {reg.name if reg else '?'}{where}"


@per_object(64)
def defined_functions(module: Module) -> dict[str, Function]:
    """Name -> function, for the module's functions with a body: once per module (each function's
    analyses look callees up in it; built per function, a module of N kernels cost N^2)."""
    return {f.name: f for f in module.functions() if f.body is not None}


@per_object(64)
def defined_names(module: Module) -> frozenset[str]:
    """The names of ``defined_functions``, as a set (once per module)."""
    return frozenset(defined_functions(module))


def build_ctx(module: Module, fn: Function, tensormaps: Iterable[TensorMap] = ()) -> FnCtx:
    g = analyse(build_cfg(fn))
    wg: dict[Site, Instr] = {}
    rel: set[str] = set()
    for b in g.blocks:
        for k, ins in enumerate(b.instrs):
            if is_wgmma(ins):
                wg[Site(b.index, k)] = ins
                acc, a, _ = wgmma_regs(ins)
                rel |= acc | a
    items = {b.index: tuple((Site(b.index, k), ins) for k, ins in enumerate(b.instrs)) for b in g.blocks}
    rel_f = frozenset(rel)
    hot = {b: tuple(x for x in its if _hot(x[1], rel_f)) for b, its in items.items()}
    return FnCtx(module, fn, g, wg, rel_f, items, hot, {t.name: t for t in tensormaps})


_HOT_BASES = frozenset({"wgmma", "ret", "exit", "trap", "call", "bra", "brx", "fence", "stmatrix"})


def _hot(ins: Instr, relevant: frozenset) -> bool:
    """Instructions that can change some pipeline analysis's state (the rest are skipped)."""
    if ins.base in _HOT_BASES or ins.guard is not None:
        return True
    op = ins.opcode
    if ".shared" in op or op.startswith(("cp.async", "wmma.store")):
        return True
    if relevant:
        d, u = defs_uses(ins)
        return not (relevant.isdisjoint(d) and relevant.isdisjoint(u))
    return False


def sites(ctx: FnCtx, block: int, hot_only: bool = False):
    return ctx.hot[block] if hot_only else ctx.items[block]


__all__ = ["FnCtx", "Site", "build_ctx", "defined_functions", "defined_names", "sites", "is_wgmma", "wgmma_regs", "wgmma_shape", "Instr"]
