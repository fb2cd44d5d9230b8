"""The fills of the wgmma mainloops (strategies/mainloops.py ``WgmmaLoopPlan.fill``): cp.async,
TMA tensor boxes and ld.global + st.shared compute what the bulk fill computes from the same
inputs, ptxas 13.0.88 accepts them silently, the checker raises nothing, and the reference runs
``cp.async.mbarrier.arrive{.noinc}`` (oracles/reference/cp_async.py)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from fuzzptx.data import buffer_bytes
from fuzzptx.isa import ELEMENT_BITS
from fuzzptx.oracles.checker import check_module
from fuzzptx.oracles.ptxas import compile_batch
from fuzzptx.oracles.reference import run_program
from fuzzptx.oracles.reference.errors import StepLimit
from fuzzptx.oracles.reference.values import UNDEF
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.parse import parse
from fuzzptx.strategies.descriptors import SmemTile
from fuzzptx.strategies.direct import draw, reproducible
from fuzzptx.strategies.mainloops import (COMPLETE_TX_FILLS, FAULT_FILLS, FILLS, WGMMA_FAULTS, WgmmaLoopPlan,
                                         render_wgmma, tensor_maps, wgmma_kernel_text, wgmma_loop_plans, with_fill)

SOME = settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
#: (fill, chunk, cache operator, completion): every option of the generic-proxy fills
OPTIONS = (("cp.async", 16, "cg", "wait_group"), ("cp.async", 8, "ca", "wait_all"), ("cp.async", 4, "ca", "noinc"),
           ("cp.async", 16, "ca", "noinc"), ("ld.st", 16, "cg", "wait_group"), ("ld.st", 8, "cg", "wait_group"),
           ("ld.st", 4, "cg", "wait_group"))


def _bytes_tile(tile: SmemTile) -> SmemTile:
    """The same layout over bytes (a K-major row's bytes in order): sub-byte types map too."""
    kb = tile.k * ELEMENT_BITS[tile.elem] // 8
    return SmemTile("u8", tile.mn, kb, replace(tile.layout, element_bits=8))


def bulk_images(plan: WgmmaLoopPlan, prog: Program) -> tuple[bytes, bytes]:
    """The bulk fill's global images (each K-step's tiles as shared memory holds them) of the
    matrices a tensor-fill program's maps read: what the bulk plan must be given to compute the same."""
    K, CW = plan.ktiles, plan.consumers
    ta, tb = tensor_maps(plan)
    a = buffer_bytes(prog.buffers[0])
    b = buffer_bytes(prog.buffers[1])
    if plan.a_tile is not None:  # else the register images: the same bytes
        t = _bytes_tile(plan.a_tile)
        am = a.reshape(ta.dims[1], ta.dims[0] * ta.element_bytes)
        img = np.zeros(plan.tiles * K * CW * plan._a_copy, np.uint8)
        mn, kk = np.meshgrid(np.arange(64), np.arange(t.k), indexing="ij")
        addr = np.asarray(t.address(mn, kk))
        for tile in range(plan.tiles):
            for k in range(K):
                for c in range(CW):
                    base = ((tile * K + k) * CW + c) * plan._a_copy
                    img[base + addr] = am[(tile * CW + c) * 64 + mn, k * t.k + kk]
        a = img
    t = _bytes_tile(plan.b_tile)
    bm = b.reshape(tb.dims[1], tb.dims[0] * tb.element_bytes)
    img = np.zeros(K * plan._b_copy, np.uint8)
    nn, kk = np.meshgrid(np.arange(t.mn), np.arange(t.k), indexing="ij")
    addr = np.asarray(t.address(nn, kk))
    for k in range(K):
        img[k * plan._b_copy + addr] = bm[nn, k * t.k + kk]
    return a.tobytes(), img.tobytes()


def _same(r1, r2) -> None:
    o1, o2 = r1.outputs["d"], r2.outputs["d"]
    assert r1.undefined is None and r2.undefined is None, (r1.undefined, r2.undefined)
    assert (o1.kind != UNDEF).all() and np.array_equal(o1.kind, o2.kind)
    assert r1.bytes("d") == r2.bytes("d")


@SOME
@given(wgmma_loop_plans(), st.sampled_from(OPTIONS))
def test_a_generic_proxy_fill_computes_what_the_bulk_fill_computes_from_the_same_inputs(plan, option):
    bulk = replace(plan, fill="bulk")
    other = with_fill(plan, *option)
    _same(run_program(render_wgmma(bulk)), run_program(render_wgmma(other)))


@SOME
@given(wgmma_loop_plans())
def test_tensor_boxes_land_the_canonical_layout_the_descriptors_read(plan):
    """The tensor fill reads row-major matrices through the maps; the bulk fill of the same plan,
    given those matrices laid out by the tiles' address maps, computes the same bits."""
    tens = with_fill(plan, "tensor")
    tp = render_wgmma(tens)
    ia, ib = bulk_images(tens, tp)
    bp = render_wgmma(replace(tens, fill="bulk"))
    bp = replace(bp, buffers=(replace(bp.buffers[0], init="hex:" + ia.hex()),
                              replace(bp.buffers[1], init="hex:" + ib.hex()), bp.buffers[2]))
    assert len(ia) == bp.buffers[0].nbytes and len(ib) == bp.buffers[1].nbytes
    _same(run_program(tp), run_program(bp))


def test_tensor_fills_draw_only_layouts_a_box_produces_and_maps_the_driver_encodes():
    with reproducible():
        plans = [with_fill(draw(wgmma_loop_plans(), f"tmaps:{i}"), "tensor") for i in range(60)]
    swizzles = set()
    for p in plans:
        for t in (p.a_tile, p.b_tile):
            if t is None:
                continue
            lay = t.layout
            assert t.major == "K" and lay.base_offset == 0 and lay.start % {"none": 128, "32B": 256, "64B": 512,
                                                                              "128B": 1024}[t.swizzle] == 0
            swizzles.add(t.swizzle)
        ta, tb = tensor_maps(p)
        assert ta.encode_issues() == () and tb.encode_issues() == (), (ta, tb)
        # expect_tx: the boxes' bytes, padded swizzle rows not included
        kb = 32  # every dense form's K-step is 32 bytes
        assert p.fill_bytes == p.consumers * 64 * kb + p.form.shape.n * kb
    assert swizzles == {"none", "32B", "64B", "128B"}


@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(wgmma_loop_plans(), min_size=len(OPTIONS) + 2, max_size=len(OPTIONS) + 2))
def test_every_fill_compiles_silently_checks_clean_and_runs_defined(plans):
    plans = [with_fill(p, *o) for p, o in zip(plans, OPTIONS + (("tensor",), ("tensor",)))]
    progs = [render_wgmma(p) for p in plans]
    for p, r in zip(progs, compile_batch([pr.to_ptx() for pr in progs])):
        assert r.accepted and not r.diagnostics, (p.notes, r.stderr)
    for p in progs:
        assert [f for f in check_module(p.module, tensormaps=p.tensormaps) if f.severity in ("error", "warning")] == [], p.notes
        r = run_program(p)
        assert r.undefined is None and (r.outputs["d"].kind != UNDEF).all(), (p.notes, r.undefined)


def test_every_fill_and_option_is_drawn_and_twins_only_with_the_fills_they_apply_to():
    with reproducible():
        plans = [draw(wgmma_loop_plans(), f"fills:{i}") for i in range(300)]
        twins = [draw(wgmma_loop_plans(fault=f), f"fills:{f}:{i}") for f in WGMMA_FAULTS for i in range(12)]
    seen = {(p.fill, p.chunk, p.cp_op, p.cp_done) if p.fill == "cp.async" else (p.fill, p.chunk) if p.fill == "ld.st"
            else (p.fill,) for p in plans}
    want = {("bulk",), ("tensor",)} | {("ld.st", c) for c in (4, 8, 16)} | {
        ("cp.async", c, op, d) for c in (4, 8, 16) for op in ("cg", "ca") for d in ("wait_group", "wait_all", "noinc")
        if op == "ca" or c == 16}
    assert want <= seen, want - seen
    assert {(p.fill, p.producer_wg) for p in plans if p.fill != "bulk"} >= {(f, w) for f in FILLS[1:]
                                                                           for w in (False, True)}
    assert {p.depth for p in plans if p.fill == "tensor"} == {0, 1}  # a refill under an in-flight wgmma too
    for p in twins:
        assert p.fill in FAULT_FILLS[p.fault], (p.fault, p.fill)
        if p.fault == "missing_expect_tx":
            assert p.fill in COMPLETE_TX_FILLS
    assert {p.fill for p in twins if p.fault == "unfenced_fill"} == {"cp.async", "ld.st"}
    assert "tensor" in {p.fill for p in twins if p.fault == "producer_overwrite"}
    assert "noinc" not in {p.cp_done for p in twins if p.fault == "unfenced_fill"}


def test_an_unfenced_fill_is_undefined_only_where_wgmma_reads_it_through_the_async_proxy():
    """Every fill without its fence.proxy.async: the descriptor reads of B are undefined, and with
    the fence (the legal plan) nothing is; the fence is the only difference in the text."""
    from support.hw_mainloops import plan as shape, F16_DESC

    legal = with_fill(shape(F16_DESC, 16, "desc", stages=2, ktiles=3, tiles=2), "cp.async", 8, "ca", "wait_all")
    twin = replace(legal, fault="unfenced_fill")
    lt, tt = wgmma_kernel_text(legal), wgmma_kernel_text(twin)
    assert lt.replace("\tfence.proxy.async.shared::cta;\n", "") == tt.replace("\tfence.proxy.async.shared::cta;\n", "")
    assert lt.count("fence.proxy.async") == tt.count("fence.proxy.async") + 3 * 1  # one fill per K-step
    assert (run_program(render_wgmma(legal)).outputs["d"].kind != UNDEF).all()
    r = run_program(render_wgmma(twin))
    assert (r.outputs["d"].kind == UNDEF).all()
    assert any("no fence.proxy.async" in n for n in r.notes), r.notes
    assert {f.rule for f in check_module(render_wgmma(twin).module) if f.severity == "error"} == \
        {"spec.proxy.fence-missing"}


# ---------------------------------------------------------------- cp.async.mbarrier.arrive in the reference

def _arrive_kernel(arrive: str, read_first: bool = False, count: int = 32) -> Program:
    """32 threads each cp.async 16 bytes into shared memory, arrive through ``arrive``, wait on the
    barrier's phase 0, and copy their 16 bytes out (optionally reading them before the wait)."""
    read = ["ld.shared.v4.u32 \t{%r10, %r11, %r12, %r13}, [%r3];", "st.global.v4.u32 \t[%rd5], {%r10, %r11, %r12, %r13};"]
    wait = ["W:", "mbarrier.try_wait.parity.shared::cta.b64 \t%p2, [bar], 0;", "@!%p2 bra \tW;"]
    body = [
        "ld.param.u64 \t%rd1, [a];", "ld.param.u64 \t%rd2, [o];", "mov.u32 \t%r1, %tid.x;",
        "shl.b32 \t%r2, %r1, 4;", "mov.u32 \t%r4, buf;", "add.u32 \t%r3, %r4, %r2;",
        "cvt.u64.u32 \t%rd3, %r2;", "add.s64 \t%rd4, %rd1, %rd3;", "add.s64 \t%rd5, %rd2, %rd3;",
        "setp.eq.u32 \t%p1, %r1, 0;", f"@%p1 mbarrier.init.shared::cta.b64 \t[bar], {count};",
        "bar.sync \t0;", "cp.async.cg.shared.global \t[%r3], [%rd4], 16;", *arrive.split("\n"),
        *((read + wait) if read_first else (wait + read)), "ret;"]
    text = "\n".join([".version 8.4", ".target sm_90a", ".address_size 64",
                      ".visible .entry k(.param .u64 a, .param .u64 o)", ".reqntid 32", "{",
                      ".reg .pred %p<4>;", ".reg .b32 %r<16>;", ".reg .b64 %rd<8>;",
                      ".shared .align 16 .b8 buf[512];", ".shared .align 8 .b64 bar;"]
                     + ["\t" + x if not x.endswith(":") else x for x in body] + ["}", ""])
    return Program(parse(text, "arrive.ptx"), Launch("k", (1, 1, 1), (32, 1, 1)),
                   (Buffer("a", "u32", 128, "random", 7), Buffer("o", "u32", 128, "zeros", output=True)))


NOINC = "cp.async.mbarrier.arrive.noinc.shared::cta.b64 \t[bar];"
INC = "cp.async.mbarrier.arrive.shared::cta.b64 \t[bar];\nmbarrier.arrive.shared::cta.b64 \t_, [bar];"


@pytest.mark.parametrize("arrive", [NOINC, INC], ids=["noinc", "inc+arrive"])
def test_the_arrive_on_completion_orders_the_copies_before_the_phase(arrive):
    p = _arrive_kernel(arrive)
    assert compile_batch([p.to_ptx()])[0].accepted
    r = run_program(p)
    assert r.undefined is None and (r.outputs["o"].kind == 0).all()
    assert r.bytes("o") == buffer_bytes(p.buffers[0]).tobytes()
    # read before the wait: the copies belong to a phase no wait has observed yet
    early = run_program(_arrive_kernel(arrive, read_first=True))
    assert (early.outputs["o"].kind == UNDEF).all()


def test_the_arrive_without_noinc_does_not_count_and_noinc_counts_against_the_expected_arrivals():
    # without .noinc and no plain arrive, phase 0 never completes: every thread waits for ever
    with pytest.raises(StepLimit, match="hang: every live thread waits"):
        run_program(_arrive_kernel("cp.async.mbarrier.arrive.shared::cta.b64 \t[bar];"))
    # .noinc counts once per thread: 32 arrivals complete a phase of 32 (above), not one of 33
    with pytest.raises(StepLimit, match=r"still needs 1 arrival\(s\)"):
        run_program(_arrive_kernel(NOINC, count=33))


def test_the_h100_record_ran_every_fill_shape_and_twin_and_explains_every_mismatch():
    """The committed device record (``tests/support/hw_mainloops.py --fills``) against today's lists."""
    import json
    import pathlib

    from support.hw_mainloops import FILL_SHAPES, FILL_TWINS

    rec = json.loads((pathlib.Path(__file__).parent / "hw_records" / "mainloops_fills_h100.json").read_text())
    assert rec["mode"] == "fills" and rec["device"]["device"].startswith("NVIDIA H100") and rec["ptxas"] == "13.0.88"
    ran = {r["case"].split("/")[0] for r in rec["results"]}
    assert set(FILL_SHAPES) | set(FILL_TWINS) <= ran
    for fill in ("cp.async", "tensor", "ld.st"):  # drawn plans of each fill, both A sources among all runs
        assert sum(r["case"].startswith(f"drawn-{fill}/") for r in rec["results"]) >= 3
        plans = [r["plan"] for r in rec["results"] if f"fill={fill}" in r["plan"] and r["twin"] is None]
        assert any("a=desc" in p for p in plans) and any("a=ld.shared" in p or "a=ldmatrix" in p for p in plans)
    assert rec["faults"] == 0 and rec["rejected_by_ptxas"] == [] and rec["legal_with_undefined_elements"] == 0
    legal_mismatched = {r["case"] for r in rec["results"] if r["mismatches"]}
    ex = rec["mismatches_explained"]
    assert {p["case"] for p in ex["programs"]} == legal_mismatched and ex["all_fp8_with_f32_accumulator"]
    assert ex["equal_to_hardware_numerics"] == ex["listed_gpu_values"] > 0
