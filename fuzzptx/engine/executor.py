"""The one executor: every command that judges programs goes through the engine's stages.

``fuzzptx run`` and ``fuzzptx campaign`` draw their blocks and judge them in a pool (``block``,
``campaign``); ``fuzzptx replay``, the release matrix and ``fuzzptx bisect``, the reducer's
predicate (``fuzzptx shrink``, a campaign's shrinking) and the pytest plugin's ``check_program``
judge programs they are given.  Those are a block of given programs here, through the same
stages in the same order (``block.POOL_STAGES``: emit, compile with the early judges beside it,
warm, batch, program; then ``block.gpu_stages``: the GPU and the metamorphic stage), with the
judges' declarations (``Judge.stage``, ``Judge.needs``) deciding who runs where; compare is
``differ.compare`` on the verdicts.  What differs from the fuzz loop is data: the programs and
the texts they are judged as, the compile stage's ptxas release, and ``every_verdict`` (a
command that shows what every judge says asks judges that need the compiler's acceptance about
a program the compiler rejects too; the fuzz loop skips them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from fuzzptx.errors import FuzzptxError
from fuzzptx.judges import differ
from fuzzptx.judges.base import DEVICE, Verdicts
from fuzzptx.judges.finding import Finding
from fuzzptx.judges.selection import JudgeSet
from fuzzptx.oracles.toolchains import Toolchain
from fuzzptx.program import Program

from .block import BlockState, gpu_stages, pool_stages
from .generate import BlockTask


@dataclass(frozen=True)
class Executor:
    """Judges, and how: ``toolchain`` the compile stage's ptxas release (None: the pinned one);
    ``gpu`` a GPU worker the caller holds (None: one is started for a call whose judges need a
    GPU); ``every_verdict`` as ``BlockTask.every_verdict``."""

    judges: JudgeSet
    toolchain: Toolchain | None = None
    gpu: Any = None
    every_verdict: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "judges", JudgeSet.of(self.judges))

    def verdicts(self, programs: Sequence[Program], texts: Sequence[str | None] | None = None,
                 judged: Sequence[Program | None] | None = None, *,
                 until: Callable[[int, Program, Verdicts], bool] | None = None,
                 failed: list[dict[str, BaseException]] | None = None) -> list[Verdicts]:
        """Each program's verdicts, the programs one block.  ``texts``: the PTX each is judged as
        (None: emitted from it; a file's program: the file's bytes), ``judged`` its IR as parsed
        from that text where the caller has it.  ``until(k, program, verdicts)`` true ends the
        block after program k (the verdicts stop there).  ``failed``: filled with one dict per
        program of the judges that raised ImportError or FuzzptxError (those then give no verdict);
        without it they raise."""
        n = len(programs)
        given = tuple((p, texts[k] if texts is not None else None, judged[k] if judged is not None else None)
                      for k, p in enumerate(programs))
        task = BlockTask(0, 0, max(1, n), self.judges, given=given, toolchain=self.toolchain,
                         every_verdict=self.every_verdict)
        st = pool_stages(BlockState(task, (), until=until, failed=failed))
        if any(st.gpu):
            self._gpu_stages(st)
        return st.verdicts

    def judge(self, program: Program, text: str | None = None, judged: Program | None = None,
              failed: dict[str, BaseException] | None = None) -> Verdicts:
        """One program's verdicts (a block of one)."""
        sink: list[dict[str, BaseException]] | None = None if failed is None else []
        v = self.verdicts([program], None if text is None else [text], None if judged is None else [judged],
                          failed=sink)[0]
        if failed is not None and sink:
            failed.update(sink[0])
        return v

    @staticmethod
    def findings(program: Program, v: Verdicts) -> list[Finding]:
        """The compare stage: the disagreements of the verdicts."""
        return differ.compare(program, v)

    def _gpu_stages(self, st: BlockState) -> None:
        worker = self.gpu
        started = None
        if worker is None and self.judges.needing(DEVICE):
            from fuzzptx.oracles.hardware import HardwareWorker  # CuPy's worker: only where a GPU judge runs

            worker = started = HardwareWorker()
            try:
                worker.start()
            except FuzzptxError as exc:  # no GPU after all: the GPU stages' judges say so
                if st.failed is None:
                    raise
                for k, work in enumerate(st.gpu):
                    st.failed[k].update({name: exc for name in work})
                return
        try:
            for judge, k, verdict, _ in gpu_stages(self.judges.on_gpu_stages(), st.programs[:len(st.gpu)], st.gpu, worker):
                if isinstance(verdict, (ImportError, FuzzptxError)) and st.failed is not None:
                    st.failed[k][judge.name] = verdict
                elif isinstance(verdict, BaseException):
                    raise verdict
                elif verdict is not None:
                    st.verdicts[k][judge.name] = verdict
        finally:
            if started is not None:
                started.close()
