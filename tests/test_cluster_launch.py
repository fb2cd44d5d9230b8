"""The launch of a kernel that runs in a cluster (issue 41): CUTLASS's cluster shape is a template
constant (no ``.reqnctapercluster`` in its PTX), so the search tries small cluster shapes for a
kernel that multicasts its copies, scored by the reference's coverage like its scalars; the header
names the cluster (``cluster=``) and the grid is the one cluster the reference runs."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fuzzptx import launch
from fuzzptx.inputs import read_text
from fuzzptx.oracles.reference import run_program
from fuzzptx.program import Program
from fuzzptx.ptx.parse import parse

DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("name,shape,stage_bytes", [
    # A's 64 x 128 f16 box, and B's half (64 x 64) from each CTA of the pair: CUTLASS's whole tiles
    ("ws_coop_f16_128x128x64_cluster2x1", (2, 1, 1), 128 * 64 * 2 + 2 * 64 * 64 * 2),
    # A's half (32 x 128 e4m3) from each CTA of the pair, and B's 128 x 128 box
    ("ws_pingpong_e4m3xe5m2_bf16_64x128x128_cluster1x2", (1, 2, 1), 2 * 32 * 128 + 128 * 128)])
def test_cutlass_cluster_kernels_get_their_cluster_and_run_every_tensor_core_instruction(name, shape, stage_bytes):
    """Both stopped at their first multicast copy in one CTA (0 of 24); in a cluster of the shape the
    search finds (the one CUTLASS was built with) every wgmma, ldmatrix and stmatrix runs, and the
    printed header, pasted back, launches the same."""
    path = DATA / "cutlass" / f"{name}.ptx"
    text = read_text(path, what="PTX file")
    p = launch.load(text, str(path))
    assert p.launch.cluster == p.launch.grid == shape
    assert f"cluster={','.join(map(str, shape))}" in p.header_lines()[1]
    assert any("a cluster of 2 CTAs" in n for n in p.notes)
    fn = parse(text, str(path)).kernels()[0]
    bounds = [k for k, v in launch.struct_bounds(fn).items() if v == 1]
    assert bounds  # the tile scheduler's tile count: one tile per CTA of the cluster
    for param, at in bounds:
        assert (dict(p.scalars)[param] >> (8 * at)) & ((1 << 64) - 1) == 2
    # the bytes one pipeline stage brings each CTA: a multicast map's box once from each CTA of its group
    (param, at), = [k for k in launch.struct_tx_words(fn) if k[1] == 640]
    assert (dict(p.scalars)[param] >> (8 * at)) & 0xFFFFFFFF == stage_bytes
    t = launch.trial(p)
    assert t.error is None and t.coverage.ran == t.coverage.of == 24, (t.error, t.coverage.text())
    assert not any("lands on a phase expecting" in n for n in run_program(p).notes)
    again = Program.from_ptx(p.to_ptx(), "again.ptx")
    assert again.launch == p.launch
    one = launch.trial(replace(p, launch=replace(p.launch, grid=(1, 1, 1), cluster=(1, 1, 1))))
    assert one.coverage.ran == 0 and "outside the cluster of 1 CTA" in one.error


KERNEL = """.version 8.4
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 o)
{directive}
{{
	.reg .b16 %rs<2>;
	.reg .b32 %r<4>;
	mov.u16 %rs1, 3;
	mov.u32 %r1, %cluster_ctarank;
	{copy}
	ret;
}}
"""
MULTICAST = ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
             "[%r1], [%rd1], 16, [%r1], %rs1;")


def _fn(directive: str = "", copy: str = ""):
    return parse(KERNEL.format(directive=directive, copy=copy.replace("%rd1", "%r1")), "k.ptx").kernels()[0]


def test_the_cluster_shapes_the_search_tries():
    """A kernel's own .reqnctapercluster is its shape; a kernel that multicasts tries the small shapes,
    one CTA last; any other keeps its grid (reading %cluster_ctarank alone asks for no cluster)."""
    plain = Program.from_ptx(KERNEL.format(directive="", copy=""), "k.ptx")
    assert launch.cluster_shapes(plain, _fn()) == ((1, 1, 1),)
    assert launch.cluster_shapes(plain, _fn(".reqnctapercluster 1, 2")) == ((1, 2, 1),)
    shapes = launch.cluster_shapes(plain, _fn(copy=MULTICAST))
    assert shapes[:3] == ((2, 1, 1), (1, 2, 1), (1, 1, 2)) and shapes[-1] == (1, 1, 1)
    la = plain.launch
    assert launch._in_cluster(la, _fn(), (1, 1, 1)) == la
    assert launch._in_cluster(la, _fn(copy=MULTICAST), (2, 1, 1)).cluster == (2, 1, 1)
    own = launch._in_cluster(la, _fn(".reqnctapercluster 2"), (2, 1, 1))
    assert own.grid == (2, 1, 1) and own.cluster == (1, 1, 1)  # the kernel states it: no launch attribute


def test_a_cluster_given_in_the_launch_json_is_the_one_tried():
    """``--launch '{"cluster": [2, 1, 1]}'`` (or Triton's ``num_ctas``): the grid is that cluster and
    the search tries no other shape; a bad value is one line naming where it came from."""
    path = DATA / "cutlass" / "ws_coop_f16_128x128x64_cluster2x1.ptx"
    given = launch.parse_launch_option('{"cluster": [2, 1, 1]}')
    assert given.cluster == (2, 1, 1)
    assert launch.given_from_json({"num_ctas": 2}, "meta.json").cluster == (2, 1, 1)
    assert launch.given_from_json({"num_ctas": 1}, "meta.json").cluster is None
    p = launch.load(read_text(path, what="PTX file"), str(path), given=given)
    assert p.launch.cluster == p.launch.grid == (2, 1, 1) and "cluster" in p.given
    assert any("launch given by --launch: cluster 2,1,1" in n for n in p.notes)
    assert launch.cluster_shapes(p, parse(read_text(path, what="PTX file"), str(path)).kernels()[0]) == ((2, 1, 1),)
    for bad, why in (('{"cluster": [17]}', "at most 16 CTAs"), ('{"cluster": [0, 1]}', "expected positive integers"),
                     ('{"cluster": "x"}', "is not a number")):
        with pytest.raises(launch.LaunchError, match=why) as e:
            launch.parse_launch_option(bad)
        assert "\n" not in str(e.value) and "--launch" in str(e.value)
