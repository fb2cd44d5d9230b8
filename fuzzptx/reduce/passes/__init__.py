"""The reduction passes and the order the driver runs them in (the one place that order is written)."""
from __future__ import annotations

from fuzzptx.reduce.passes.base import Pass
from fuzzptx.reduce.passes.memory import Addresses, Bytes, Constants, Footprint, FragmentStore, ShareTile, TinyTile
from fuzzptx.reduce.passes.structure import (Blocks, Bypass, CopyPropagate, Counts, Data, Entries, Funcs, Narrow,
                                              Simplify, Types)
from fuzzptx.reduce.passes.tensor import Dense, Reuse
from fuzzptx.reduce.passes.values import Bits, Cse, Decls, Fold, Fuse, Launch, Loads, Symbols, Tail, Warpgroup

PRE: tuple[Pass, ...] = (Entries(), Launch(), Warpgroup())
"""Run to a fixed point before the first deletions: they make each judgement cheaper (the other
kernels of a module first: a judgement compiles them all)."""

PASSES: tuple[Pass, ...] = (Warpgroup(), Blocks(), Funcs(), Simplify(), Bypass(), CopyPropagate(), Narrow(), Types(), Data(),
                            Counts(), Dense(), FragmentStore(), ShareTile(), Constants(), Loads(), Bytes(), Addresses(),
                            Footprint(), TinyTile(), Symbols(), Fold(), Fuse(), Cse(), Reuse(), Bits(), Launch(), Tail(), Decls())
"""Each round, after the deletions (ddmin), in this order: structure first, then values."""

__all__ = ["PASSES", "PRE", "Pass", "Addresses", "Bits", "Blocks", "Bypass", "Bytes", "Constants", "CopyPropagate", "Counts",
           "Cse", "Data", "Decls", "Dense", "Entries", "Fold", "Footprint", "FragmentStore", "Funcs", "Fuse", "Launch", "Loads", "Narrow",
           "Reuse", "ShareTile", "Simplify", "Symbols", "Tail", "TinyTile", "Types", "Warpgroup"]
