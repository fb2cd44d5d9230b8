"""The synchronisation instructions of issue 27 beside the copies, on small kernels with known
answers (``support.sync_kernels``): named barriers with thread counts where the consumer reaches
``bar.sync`` first (one way and ping-pong), ``griddepcontrol`` (no-ops in a plain launch) and
``prefetch.tensormap`` before a TMA load; and the H100 record of the same kernels."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fuzzptx.oracles.checker import check_module
from fuzzptx.oracles.ptxas import compile_batch
from fuzzptx.oracles.reference import run_program
from fuzzptx.oracles.reference.errors import Unsupported
from fuzzptx.data import buffer_bytes
from fuzzptx.oracles.reference.mem_ops import h_griddepcontrol
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Instr, Reg
from fuzzptx.strategies.direct import draw, reproducible
from fuzzptx.strategies.tensor_copies import copy_plans, render
from support.sync_kernels import KERNELS, prefetch_tensormap, program

RECORD = Path(__file__).resolve().parent / "hw_records" / "sync_h100.json"


def _words(name: str, ref) -> np.ndarray:
    return np.frombuffer(ref.outputs[name].data, dtype=np.uint32)


def _input(p: Program) -> np.ndarray:
    return np.frombuffer(buffer_bytes(p.buffers[0]).tobytes(), dtype=np.uint32)[:128]


@pytest.mark.parametrize("seed", [1, 2])
def test_named_barriers_hand_the_producers_words_to_the_consumers(seed):
    one = program("named_one_way", seed)
    g = _input(one)
    got = _words("o", run_program(one))
    assert np.array_equal(got[:128], (g * 3 + np.arange(128, dtype=np.uint32)).astype(np.uint32))
    pp = program("named_ping_pong", seed)
    got = _words("o", run_program(pp))
    assert np.array_equal(got[128:], (g + 1).astype(np.uint32)) and not got[:128].any()


def test_griddepcontrol_is_a_no_op_in_a_plain_launch():
    p = program("griddepcontrol", 5)
    g = _input(p)
    assert np.array_equal(_words("o", run_program(p))[:128], g ^ np.arange(128, dtype=np.uint32))
    for odd in (Instr("griddepcontrol.wait.launch_dependents"), Instr("griddepcontrol.wait", (Reg("%r1"),))):
        with pytest.raises(Unsupported):
            h_griddepcontrol(None, None, odd, None)


def test_prefetch_tensormap_before_a_tensor_load_changes_nothing():
    with reproducible():
        plain = render(draw(copy_plans(), "sync:prefetch"))
    pre = prefetch_tensormap(plain)
    assert pre.to_ptx().count("prefetch.tensormap") == len(plain.tensormaps)
    a, b = run_program(plain), run_program(pre)
    for name in a.outputs:
        assert a.outputs[name].data == b.outputs[name].data


def test_the_kernels_are_accepted_by_ptxas_and_clean_for_the_checker():
    progs = [program(n) for n in sorted(KERNELS)]
    with reproducible():
        progs.append(prefetch_tensormap(render(draw(copy_plans(), "sync:prefetch"))))
    assert all(r.accepted for r in compile_batch([p.to_ptx() for p in progs]))
    for p in progs:
        assert [f for f in check_module(p.module, tensormaps=p.tensormaps) if f.severity == "error"] == [], p.notes


def test_the_h100_record_matches_the_reference_on_every_run():
    rec = json.loads(RECORD.read_text())
    assert rec["device"]["device"].startswith("NVIDIA H100")
    kinds = {r["kernel"].split(":")[0] for r in rec["rows"]}
    assert kinds == set(KERNELS) | {"prefetch_tensormap"}
    assert rec["runs"] == len(rec["rows"]) >= 40
    assert rec["rejected_by_ptxas"] == [] and rec["faults"] == 0 and rec["reference_errors"] == 0
    assert rec["hand_kernels_with_undefined_elements"] == 0 and rec["runs_with_mismatches"] == 0
    # the drawn kernels are kept as text: the reference still gives what the GPU gave (no mismatch),
    # and a run of one of them here still runs
    first = next(r for r in rec["rows"] if r["ptx"])
    assert run_program(Program.from_ptx(first["ptx"], "rec.ptx")).undefined is None
