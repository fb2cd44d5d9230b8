"""The early judges of a block (those that run while it compiles): a judge that needs the
compiler's acceptance waits for the compiler on a program an earlier judge foresees it rejecting."""
from __future__ import annotations

from pathlib import Path

from fuzzptx.engine.block import prepare_block
from fuzzptx.engine.generate import BlockTask
from fuzzptx.judges.selection import JudgeSet

KERNEL = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  add.s32 %r1, %r1, 1;
  st.global.u32 [%rd2], %r1;
  ret;
}
"""


def test_reference_waits_for_ptxas_where_the_checker_predicts_a_rejection(tmp_path: Path) -> None:
    bad = tmp_path / "old_version.ptx"  # first in the block: judged early while ptxas still runs
    bad.write_text(KERNEL.replace(".version 8.0", ".version 6.0"))
    good = tmp_path / "kernel.ptx"
    good.write_text(KERNEL)
    task = BlockTask(0, 0, 2, JudgeSet.of(("reference", "checker", "ptxas")), corpus=(str(bad), str(good)))
    rejected, accepted = prepare_block(task).verdicts
    assert rejected.predicted.accepted is False and not rejected.ptxas.accepted
    assert "reference" not in rejected and "reference" not in rejected.seconds  # never run, not dropped
    assert accepted.predicted.accepted and accepted.ptxas.accepted
    assert "reference" in accepted and "reference" in accepted.seconds
