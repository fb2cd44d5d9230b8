"""Clusters of one CTA in the reference (oracles/reference/cluster.py; several: test_cluster_reference.py): the cluster special registers,
``mapa``, ``barrier.cluster``, multicast bulk and tensor loads and their ``ctaMask``; the drawn cluster
forms of strategies/tensor_copies.py (ptxas accepts them, the reference runs them as the plain loads,
the checker stays quiet); and the H100 record they were run in (tests/hw_records/tma_cluster_h100*.json)."""
from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzptx.data import buffer_bytes
from fuzzptx.oracles.checker import check_and_predict
from fuzzptx.oracles.hw_worker import classify
from fuzzptx.oracles.ptxas import compile_ptx
from fuzzptx.oracles.reference import BadAddress, MissingInput, Unsupported, run_program
from fuzzptx.oracles.reference.errors import StepLimit
from fuzzptx.oracles.reference.values import UNDEF
from fuzzptx.program import Buffer, Launch, Program, TensorMap
from fuzzptx.ptx.parse import parse
from fuzzptx.ptx.smem import shared_layout
from fuzzptx.strategies import tensor_copies as tc
from support import hw_tma as H

RECORDS = pathlib.Path(__file__).parent / "hw_records"


def words(r, name: str) -> np.ndarray:
    return np.frombuffer(r.bytes(name), np.uint32)


# ---------------------------------------------------------------- the hand kernels (hw_tma.CLUSTER_HAND)


@pytest.mark.parametrize("name,explicit", [("cluster1-explicit", 1), ("cluster1-explicitcluster-directive", 1),
                                           ("cluster1-implicit", 0)])
def test_a_cluster_of_one_cta_runs_its_registers_mapa_and_multicast(name, explicit):
    """Rank 0 of 1, cluster 0 of 1, ``%is_explicit_cluster`` as the kernel states it (the H100 agrees:
    the record below); mapa to rank 0 (shared::cluster and generic) is the address itself; the
    multicast bulk copy with ctaMask 1 lands here, read through the cluster address."""
    p = H.cluster_hand_program(name, 21)
    r = run_program(p)
    assert r.undefined is None and not (r.outputs["o"].kind == UNDEF).any()
    a = buffer_bytes(p.buffers[0]).view(np.uint32)
    assert np.array_equal(words(r, "o"), a)
    buf = shared_layout(p.module, p.module.function("k")).offsets["buf"]
    o2 = words(r, "o2").reshape(128, 16)
    want = [0, 1, 0, 0, 1, explicit, 1, buf, 1, buf, 0, 1]
    assert (o2[:, :12] == want).all() and np.array_equal(o2[:, 12], a) and (o2[:, 13:] == [0, 0, 1]).all()
    assert compile_ptx(p.to_ptx(), arch="sm_90a").accepted
    findings, predicted = check_and_predict(p.module)
    assert findings == [] and predicted.accepted


@pytest.mark.parametrize("name", ["cluster1-mask-0x3", "cluster1-mask-0x2", "cluster1-mask-0xffff"])
def test_a_ctamask_naming_a_rank_outside_the_cluster_faults_as_on_the_h100(name):
    with pytest.raises(BadAddress, match=r"outside the cluster of 1 CTA\(s\): the H100 stops the kernel "
                                         r"\(unspecified launch failure\)"):
        run_program(H.cluster_hand_program(name, 1))


def test_a_tensor_multicast_outside_the_cluster_is_an_illegal_instruction():
    plan = dataclasses.replace(dict(H.tensor_grid())["load-store-u32-none-3d"], cluster="implicit")
    with pytest.raises(BadAddress, match=r"ctaMask 0x0003 .*\(illegal instruction\)"):
        run_program(H._tensor_mask_probe(plan))


def test_a_ctamask_of_zero_delivers_nothing_so_the_phase_never_completes():
    """As on the H100 (its bounded wait gave up with the phase incomplete): no bytes, no complete_tx."""
    with pytest.raises(StepLimit, match="hang: every live thread waits"):
        run_program(H.cluster_hand_program("cluster1-mask-0x0", 1))


def test_mapa_to_a_rank_outside_the_cluster_is_undefined():
    r = run_program(H.cluster_hand_program("cluster1-mapa-rank1-value", 1))
    o2 = r.outputs["o2"].kind.reshape(128, 16)
    assert (o2[:, 9] == UNDEF).all() and (o2[:, 13:15] == UNDEF).all() and not (o2[:, :9] == UNDEF).any()
    assert any("mapa to a rank outside the cluster" in n for n in r.notes)
    assert "undefined address" in run_program(H.cluster_hand_program("cluster1-mapa-rank1-load", 1)).undefined


def test_clusters_the_reference_cannot_run_are_refused_with_the_reason():
    """It runs one cluster (tests/test_cluster_reference.py): a grid of two clusters is refused."""
    with pytest.raises(MissingInput, match=r"the reference runs one cluster: grid=4,1,1 must be 2,1,1"):
        run_program(H.cluster_hand_program("cluster2-multicast-grid4", 1))
    with pytest.raises(MissingInput, match="grid 3,1,1 is not a multiple of kernel k's cluster 2,1,1"):
        run_program(H.cluster_hand_program("cluster2-grid3", 1))
    with pytest.raises(Unsupported, match=".explicitcluster without .reqnctapercluster"):
        run_program(H.cluster_hand_program("explicitcluster-without-dims", 1))


def test_a_multicast_with_an_undefined_mask_is_undefined():
    tm = TensorMap("tm", "g", "u32", (8, 4), (32,), (8, 2), (), 0, "none", "none", "none", "zero")
    text = tc.kernel_text(tc.CopyPlan(128, tm, ((0, 0),), None, None, True, 1, 3, cluster="implicit"))
    text = text.replace("\tcvt.u16.u32 %rs1, %r25;\n", "")  # (the emitter's form: the kernel is built as IR)
    assert "cvt.u16.u32" not in text
    prog = dataclasses.replace(tc.render(tc.CopyPlan(128, tm, ((0, 0),), None, None, True, 1, 3)),
                               module=parse(text, "t.ptx"))
    assert "undefined ctaMask" in run_program(prog).undefined


# ---------------------------------------------------------------- barrier.cluster


def barrier_kernel(body: str) -> Program:
    text = f""".version 8.4
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 o)
.reqntid 64
.reqnctapercluster 1, 1, 1
{{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<4>;
	ld.param.u64 	%rd1, [o];
	mov.u32 	%r1, %tid.x;
	setp.lt.u32 	%p1, %r1, 32;
	setp.lt.u32 	%p2, %r1, 16;
{body}
	mul.wide.u32 	%rd2, %r1, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r1;
	ret;
}}
"""
    return Program(parse(text, "b.ptx"), Launch("k", (1, 1, 1), (64, 1, 1)), (Buffer("o", "u32", 64, "zeros", output=True),), ())


ARRIVE, WAIT = "\tbarrier.cluster.arrive.aligned;\n", "\tbarrier.cluster.wait.aligned;\n"


def test_barrier_cluster_arrive_then_wait_completes_and_may_repeat():
    r = run_program(barrier_kernel(ARRIVE + WAIT + "\tbarrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;\n"))
    assert r.undefined is None and np.array_equal(words(r, "o"), np.arange(64))
    # warp 0 arrives early, branches away, and everyone meets at one wait
    r = run_program(barrier_kernel("\t@%p1 bra \tA;\n\tbra.uni \tB;\nA:\n" + ARRIVE + "\tbra.uni \tC;\nB:\n" + ARRIVE +
                                   "C:\n" + WAIT))
    assert r.undefined is None


@pytest.mark.parametrize("body,why", [
    (ARRIVE + ARRIVE + WAIT, "arrives at the cluster barrier twice"),
    (WAIT, "has not arrived"),
    ("\t@%p2 bra \tA;\n" + ARRIVE + "A:\n" + ARRIVE, "part of warp 0 (.aligned)"),
])
def test_barrier_cluster_misuse_is_undefined(body, why):
    assert why in run_program(barrier_kernel(body)).undefined


# ---------------------------------------------------------------- the drawn cluster forms


def tmap(**kw) -> TensorMap:
    base = dict(name="tm", buffer="g", type="f16", dims=(40, 5), strides=(96,), box=(64, 4), swizzle="128B")
    base.update(kw)
    return TensorMap(**base)


@pytest.mark.parametrize("form", ["implicit", "explicit"])
def test_a_cluster_form_gives_what_the_plain_loads_give(form):
    """Multicast with the own rank's mask, the cluster handshake and the mapa release change nothing the
    kernel writes (the release's wait would hang, StepLimit, were the remote arrive lost)."""
    p = tc.CopyPlan(128, tmap(), ((0, 0), (8, 4)), (0, 0), None, True, 0x0F0F0F0F, 11)
    plain, multi = run_program(tc.render(p)), run_program(tc.render(dataclasses.replace(p, cluster=form)))
    text = tc.kernel_text(dataclasses.replace(p, cluster=form))
    assert text.count(".multicast::cluster") == 2 and ("mapa.shared::cluster" in text) == (form == "explicit")
    for k in ("o", "r"):
        assert multi.bytes(k) == plain.bytes(k) and np.array_equal(multi.outputs[k].kind, plain.outputs[k].kind)


@settings(max_examples=6, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(tc.copy_plans(), st.sampled_from(tc.CLUSTER_FORMS[1:]))
def test_drawn_cluster_kernels_are_accepted_by_ptxas_run_and_raise_no_checker_finding(plan, form):
    prog = tc.render(dataclasses.replace(plan, cluster=form))
    res = compile_ptx(prog.to_ptx(), arch="sm_90a")
    assert res.accepted, res.stderr[:400]
    r = run_program(prog)
    assert r.undefined is None and all("16-byte run" in n for n in r.notes), r.notes
    findings, predicted = check_and_predict(prog.module)
    assert findings == [] and predicted.accepted and not predicted.diagnostics


def test_copy_plans_draw_every_cluster_form_after_the_plain_fields():
    """The form is the plan's last draw: each plan's other fields are what they were before."""
    seen = set()

    @settings(max_examples=40, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(tc.copy_plans())
    def collect(plan):
        seen.add(plan.cluster)

    collect()
    assert seen == set(tc.CLUSTER_FORMS)


# ---------------------------------------------------------------- the harness and the H100 record


def test_a_grid_that_is_no_multiple_of_the_cluster_is_a_benign_launch_error():
    """What CuPy raised on the H100 (the record's cluster2-grid3 row): the worker keeps its context."""
    fault, poisoned = classify(RuntimeError("CUDADriverError: CUDA_ERROR_INVALID_CLUSTER_SIZE: a kernel launch "
                                            "error has occurred due to cluster misconfiguration"))
    assert fault.startswith("load error") and not poisoned


def test_the_h100_cluster_record_is_explained_by_the_reference(tmp_path):
    """tests/hw_records/tma_cluster_h100.json (one device call, hw_tma.py --cluster) judged again by
    today's reference (--cluster --reexamine, here and now): no row unexplained, each probe's fault
    predicted; the committed _reexamined.json says the same."""
    run = json.loads((RECORDS / "tma_cluster_h100.json").read_text())
    out = tmp_path / "again.json"
    assert H.main(["--cluster", "--reexamine", str(RECORDS / "tma_cluster_h100.json"), "--out", str(out)]) == 0
    again = json.loads(out.read_text())
    committed = json.loads((RECORDS / "tma_cluster_h100_reexamined.json").read_text())
    assert committed["verdicts"] == again["verdicts"]
    assert run["device"]["device"].startswith("NVIDIA H100") and run["rejected_by_ptxas"] == []
    assert run["judged"] == 116 and run["judged_with_mismatches"] == 0 and run["hand"] == 16 and run["hand_failed"] == 0
    assert again["rows"] == run["runs"] == 141 and again["unexplained"] == 0
    v = {r["case"]: r["verdict"] for r in again["results"]}
    for case in ("cluster1-mask-0x3", "cluster1-mask-0x2", "cluster1-mask-0xffff", "tensor-mask-0x3"):
        assert v[case] == "fault predicted", case
    assert v["cluster2-grid3"] == v["explicitcluster-without-dims"] == "launch refused by the driver and by the reference"
    ran = " ".join(run["cluster_instructions_run_without_fault"])
    for op in ("mapa.shared::cluster.u32", "mapa.u64", "barrier.cluster.arrive.relaxed.aligned",
               "barrier.cluster.wait.acquire.aligned", "ld.shared::cluster", "mbarrier.arrive.shared::cluster",
               "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
               "tile.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint"):
        assert op in ran, op


def test_a_cluster_wait_short_of_threads_running_elsewhere_suspends_until_they_arrive():
    """Warp 0 arrives and waits first; the others arrive later on their own path: warp 0 is suspended
    at its wait and resumes once the phase completes; a thread that arrived in a completed phase
    passes its wait at once."""
    body = "\t@%p1 bra \tA;\n\tbra.uni \tB;\nA:\n" + ARRIVE + WAIT + "\tbra.uni \tC;\nB:\n" + ARRIVE + WAIT + "C:\n"
    r = run_program(barrier_kernel(body))
    assert r.undefined is None and np.array_equal(words(r, "o"), np.arange(64))
    r = run_program(barrier_kernel(body + ARRIVE + WAIT))  # a second phase, converged again
    assert r.undefined is None and np.array_equal(words(r, "o"), np.arange(64))


def test_a_cluster_wait_completes_when_the_missing_threads_exit():
    """The wait is for the non-exited threads: warp 0 waits, the others end without arriving."""
    body = "\t@%p1 bra \tA;\n\tbra.uni \tB;\nA:\n" + ARRIVE + WAIT + "\tbra.uni \tC;\nB:\n\tret;\nC:\n"
    r = run_program(barrier_kernel(body))
    assert r.undefined is None and np.array_equal(words(r, "o")[:32], np.arange(32)) and not words(r, "o")[32:].any()


def test_a_cluster_wait_whose_missing_threads_wait_at_a_named_barrier_is_a_hang():
    body = "\t@%p1 bra \tA;\n\tbra.uni \tB;\nA:\n" + ARRIVE + WAIT + "\tbra.uni \tC;\nB:\n\tbar.sync \t1, 64;\nC:\n"
    with pytest.raises(StepLimit, match="hang"):
        run_program(barrier_kernel(body))
