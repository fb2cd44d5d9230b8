"""Where a site mutation may put its change: not where no thread arrives (strategies.mutations)."""
from __future__ import annotations

from fuzzptx.ptx.ir import Instr
from fuzzptx.ptx.parse import parse
from fuzzptx.strategies.mutations import _exited_before

KERNEL = """.version 8.2
.target sm_90a
.address_size 64
.visible .entry k()
{{
	.reg .b32 %r<4>;
	.reg .pred %p<3>;
	mov.u32 %r0, %tid.x;
	setp.gt.u32 %p1, %r0, 127;
	{exit}
	{between}
	{enter}
	{branch}
	mov.u32 %r1, 7;
L5:
	{back}
	ret;
}}
"""


def _site(**parts) -> tuple[list, int]:
    fields = {"exit": "@%p1 exit;", "between": "", "enter": "", "branch": "@!%p1 bra.uni L5;", "back": ""}
    fields.update(parts)
    body = list(parse(KERNEL.format(**fields), "k.ptx").functions()[0].body)
    return body, next(i for i, s in enumerate(body) if isinstance(s, Instr) and s.opcode == "mov.u32" and s.operands[0].name == "%r1")


def test_a_region_only_the_exited_threads_would_enter_is_dead():
    assert _exited_before(*_site())  # @%p1 exit, then @!%p1 bra over it: only %p1 threads fall through


def test_the_same_sense_or_no_exit_leaves_it_live():
    assert not _exited_before(*_site(branch="@%p1 bra.uni L5;"))  # the threads that stayed fall through
    assert not _exited_before(*_site(exit=""))
    assert not _exited_before(*_site(exit="@%p2 exit;"))


def test_a_predicate_set_again_or_a_way_in_keeps_it_live():
    assert not _exited_before(*_site(between="setp.eq.u32 %p1, %r0, 0;"))
    body, i = _site(enter="@%p2 bra.uni L9;", branch="@!%p1 bra.uni L5;\nL9:")
    assert not _exited_before(body, i)  # a branch before the skip jumps into the region
    assert not _exited_before(*_site(branch="@!%p1 bra.uni L5;\nL8:", back="@%p2 bra.uni L8;"))  # a loop back into it


def test_divergent_guard_picks_the_last_stage_a_thread_reaches():
    from hypothesis import HealthCheck, given, settings

    from fuzzptx.strategies import mutations as m
    from fuzzptx.strategies import wgmma_programs

    @settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(wgmma_programs())
    def check(p):
        q = m._divergent_guard(p, 0)
        if q is None:
            return
        body = m._body(q)
        guarded = [i for i in m._mmas(body) if body[i].guard is not None and body[i].guard.reg.name.startswith("%fz_div")]
        assert len(guarded) == 1 and not _exited_before(body, guarded[0])

    check()
