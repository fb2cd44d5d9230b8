"""Clusters of several CTAs in the reference (oracles/reference/cluster.py): one machine per CTA, run
together (``cluster.Group``); ``mapa`` and ``.shared::cluster`` loads and remote mbarrier arrives
reach the CTA the address names; a multicast tensor copy lands in every CTA its ctaMask names;
``barrier.cluster`` waits for every thread of the cluster; the launch's ``cluster=`` header field.
The H100 record of the two-CTA hand kernel (tests/hw_records/tma_cluster_h100.json) is the check
of the whole."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from fuzzptx.data import buffer_bytes
from fuzzptx.errors import FuzzptxError
from fuzzptx.oracles.reference import MissingInput, run_program
from fuzzptx.oracles.reference.errors import StepLimit
from fuzzptx.oracles.reference.values import UNDEF
from fuzzptx.program import Program
from support import hw_tma as H
from support.cluster_kernels import REMOTE, kernel, tensor_kernel

RECORDS = pathlib.Path(__file__).parent / "hw_records"

def words(r, name: str = "o") -> np.ndarray:
    return np.frombuffer(r.bytes(name), np.uint32)


def test_two_ctas_arrive_on_each_others_mbarrier_and_read_each_others_shared_memory():
    """CTA r's threads read (r ^ 1) * 1000 + tid from the peer (one CTA alone: the launch was refused)."""
    p = kernel()
    assert p.launch.cluster == (2, 1, 1) and "cluster=2,1,1" in p.header_lines()[1]
    r = run_program(p)
    assert r.undefined is None and not (r.outputs["o"].kind == UNDEF).any()
    tid = np.arange(64)
    assert np.array_equal(words(r), np.concatenate([1000 + tid, tid]))


def test_four_ctas_pair_up_in_one_cluster():
    """A cluster of 4 (2,2,1): pairs (0, 1) and (2, 3) exchange arrivals and words; the CTAs run in
    turn until each pair's waits complete."""
    r = run_program(kernel(grid="2,2,1", cluster="2,2,1"))
    tid = np.arange(64)
    assert r.undefined is None
    assert np.array_equal(words(r), np.concatenate([1000 + tid, tid, 3000 + tid, 2000 + tid]))


def test_the_cluster_special_registers_name_each_cta():
    body = "\tmov.u32 \t%r11, %cluster_ctaid.y;\n\tmov.u32 \t%r12, %cluster_nctarank;\n\tmad.lo.u32 \t%r11, %r11, 100, %r12;\n" \
           "\tmov.u32 \t%r12, %ctaid.y;\n\tmad.lo.u32 \t%r11, %r12, 10000, %r11;"
    r = run_program(kernel(body, grid="1,2,1", cluster="1,2,1"))
    assert np.array_equal(words(r), np.repeat([2, 10102], 64))


def test_a_remote_arrive_nobody_sends_is_a_hang_not_a_spin():
    body = REMOTE.replace("\t@%p1 mbarrier.arrive.shared::cluster.b64 \t_, [%r9];\n", "")
    with pytest.raises(StepLimit, match="hang: every live thread waits on an mbarrier"):
        run_program(kernel(body))


def test_a_cluster_barrier_waits_for_the_other_cta():
    """Each CTA writes its word, both meet at barrier.cluster, then each reads the peer's word: the
    peer has written it whichever CTA runs first."""
    body = "\tmapa.shared::cluster.u32 \t%r10, %r7, %r8;\n\tld.shared::cluster.u32 \t%r11, [%r10];"
    r = run_program(kernel(body))
    tid = np.arange(64)
    assert np.array_equal(words(r), np.concatenate([1000 + tid, tid]))


def test_a_grid_other_than_the_one_cluster_is_refused_and_a_bad_header_names_its_line():
    with pytest.raises(MissingInput, match="the reference runs one cluster: grid=4,1,1 must be 2,1,1"):
        run_program(kernel(grid="4,1,1"))
    with pytest.raises(FuzzptxError, match=r"pair.ptx:2: .*grid=3,1,1 is not a multiple of cluster=2,1,1"):
        kernel(grid="3,1,1")
    with pytest.raises(FuzzptxError, match=r"pair.ptx:2: cluster='2,x': expected x,y,z integers"):
        kernel(cluster="2,x")
    with pytest.raises(FuzzptxError, match=r"pair.ptx:2: cluster=17,1,1: at most 16 CTAs"):
        kernel(grid="17,1,1", cluster="17,1,1")


def test_a_multicast_tensor_copy_lands_in_every_cta_its_mask_names():
    """Rank 0 alone issues the copy with ctaMask 0x3: the box lands in both CTAs' shared memory and
    completes each one's mbarrier phase (with mask 0x1, rank 1 waits forever: a hang)."""
    p = tensor_kernel(3)
    r = run_program(p)
    g = buffer_bytes(p.buffer("g")).view(np.uint32)
    assert r.undefined is None and np.array_equal(words(r), np.concatenate([g, g]))
    with pytest.raises(StepLimit, match="hang"):
        run_program(tensor_kernel(1))


def _recorded(case: str):
    rec = json.loads((RECORDS / "tma_cluster_h100.json").read_text())
    return [r for r in rec["results"] if r["case"].split("#")[0] == case]


def test_the_two_cta_hand_kernel_gives_what_the_h100_gave():
    """The record's cluster2-multicast-dsmem rows (8 seeds, one cluster of 2 CTAs: a multicast bulk
    copy to both, a cluster barrier, mapa loads from the peer, the cluster registers): every output
    word the reference gives equals the H100's, except the four that hold addresses (mapa's values:
    the ISA gives none, the reference's encoding differs from the H100's, cluster.py)."""
    rows = _recorded("cluster2-multicast-dsmem")
    assert len(rows) == 8
    for row in rows:
        p = Program.from_ptx(H.unpack(row["program_z"]).decode(), row["case"] + ".ptx")
        assert p.launch.grid == (2, 1, 1)
        r = run_program(p)
        assert r.undefined is None, row["case"]
        hw = {k: np.frombuffer(H.unpack(v), np.uint32) for k, v in row["outputs_z"].items()}
        assert np.array_equal(words(r, "o"), hw["o"]), row["case"]
        addresses = [7, 9, 13, 14]
        keep = [k for k in range(16) if k not in addresses]
        assert np.array_equal(words(r, "o2").reshape(2, 128, 16)[:, :, keep],
                              hw["o2"].reshape(2, 128, 16)[:, :, keep]), row["case"]
