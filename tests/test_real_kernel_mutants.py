"""Mutants of real kernels (``strategies.real_kernels``; ``--generator mutants``): each edit does
what it says and no more, a mutant keeps its parent's launch, and ptxas accepts them."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import strategies as st

from fuzzptx import launch
from fuzzptx.engine.generate import BlockTask, block_programs, real_kernels
from fuzzptx.engine.options import OptionError, kernel_files
from fuzzptx.oracles.ptxas import compile_parallel
from fuzzptx.ptx.dataflow import defs_uses
from fuzzptx.ptx.ir import Instr
from fuzzptx.strategies.direct import draw, reproducible
from fuzzptx.strategies.real_kernels import EDITS, mutants_of

ROOT = Path(__file__).resolve().parents[1]
NVCC = sorted(str(p) for p in (ROOT / "tests" / "data" / "nvcc").glob("*.ptx"))
EDIT = {e.name: e for e in EDITS}


def _parent(name: str = "wgmma_m64n16_kloop.ptx"):
    f = ROOT / "tests" / "data" / "nvcc" / name
    return launch.load(f.read_text(), str(f), search_budget=(0, 0.0))


def _apply(edit: str, parent, key: str):
    with reproducible():
        return draw(st.composite(lambda d: EDIT[edit].apply(parent, d))(), key)


def _body(p):
    return [s for s in next(f for f in p.module.functions() if f.name == p.launch.kernel).body if isinstance(s, Instr)]


def test_each_edit_changes_what_it_says():
    parent = _parent()
    before = _body(parent)
    for key in ("a", "b", "c"):
        imm = _body(_apply("immediate", parent, key))
        changed = [(x, y) for x, y in zip(before, imm) if x != y]
        assert len(imm) == len(before) and len(changed) == 1 and changed[0][0].opcode == changed[0][1].opcode
        swapped = _body(_apply("reorder", parent, key))
        (i,) = [k for k in range(len(before) - 1) if (before[k], before[k + 1]) == (swapped[k + 1], swapped[k])][:1]
        (da, ua), (db, ub) = defs_uses(before[i]), defs_uses(before[i + 1])
        assert not set(da) & (set(ub) | set(db)) and not set(db) & set(ua)  # independent, so the order is free
        epi = _body(_apply("epilogue", parent, key))
        assert len(epi) in (len(before) + 1, len(before) + 2)
        k = next(k for k in range(len(before)) if before[k] != epi[k])
        assert epi[k].operands[1] == before[k - 1].operands[0]  # reads what the f32 instruction just wrote


def test_mutants_keep_the_parents_launch_and_ptxas_accepts_them():
    parents = real_kernels(tuple(NVCC))
    assert len(parents) == len(NVCC)
    with reproducible():
        mutants = [draw(mutants_of(parents[i % len(parents)]), f"m:{i}") for i in range(10)]
    for m, i in zip(mutants, range(10)):
        p = parents[i % len(parents)]
        assert m.launch == p.launch and m.buffers == p.buffers and m.source is None
        assert m.to_ptx() != p.to_ptx() and m.notes[-1].startswith(f"real-kernel mutant of {p.source}")
    results = compile_parallel([m.to_ptx() for m in mutants])
    assert sum(r.accepted for r in results) >= 9


def test_generator_mutants_is_a_function_of_the_seed():
    task = BlockTask(0, 4, 6, ("ptxas",), generator="mutants", kernels=tuple(NVCC))
    a = [p.to_ptx() for _, p, _ in block_programs(task)]
    assert a == [p.to_ptx() for _, p, _ in block_programs(task)] and len(a) == 6 and len(set(a)) == 6
    assert a != [p.to_ptx() for _, p, _ in block_programs(BlockTask(1, 4, 6, ("ptxas",), generator="mutants",
                                                                           kernels=tuple(NVCC)))]


def test_kernels_dir_without_ptx_is_one_line(tmp_path):
    with pytest.raises(OptionError, match="no .ptx file"):
        kernel_files(str(tmp_path))
