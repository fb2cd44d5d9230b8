"""What a judge is: the interface every judge implements, built in or from another package.

A judge looks at one program and returns a *verdict* (any value it likes: a ptxas result, a
list of checker findings, output buffers).  The engine never names a judge: it asks the
registry (``fuzzptx.judges.registry``) for the judges a run wants and calls them through this
interface, so a simulator, an emulator or another GPU plugs in without editing fuzzptx.

- ``Judge`` is the general interface: ``judge`` gives the verdict, ``summary`` the line of the
  verdict table and of the repro's EXPECT header, ``findings`` the disagreements it reports
  against the judges that ran before it.
- ``OutputJudge`` is the short form for judges that compute output buffers: subclass it, write
  ``run(program, inputs)``, and its outputs are compared with the reference's exactly as the
  GPU's are (bounds, undefined elements skipped).
- ``Verdicts`` maps judge name -> verdict for one program.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator, Sequence

import numpy as np

from fuzzptx.data import buffer_bytes, numpy_dtype
from fuzzptx.oracles.toolchains import Toolchain
from fuzzptx.program import Program

from .registry import get as get_judge, summary_order
from .finding import Finding
from .programs import expects_defined, outputs_against_reference


@dataclass
class CheckerVerdict:
    """The checker's findings (ISA and spec rules) and its predicted ptxas diagnostics, or the
    error it stopped on."""

    findings: list | None = None
    predicted: Any = None
    error: str | None = None


@dataclass
class ReferenceVerdict:
    """The reference's run (``RefResult``), or why it has none: an error on this program
    (``error``, with ``error_kind`` its class and message shape so that shrinking keeps the same
    error) or an instruction outside its subset (``skipped``: not a finding).  ``mutation_reached``:
    whether the run reached what a labelled mutation made undefined.  ``mode``: the numerics it ran
    in, so that a later judge wanting the same run (the compile pairs' eligibility) reads this one."""

    result: Any = None
    error: str | None = None
    skipped: str | None = None
    error_kind: str = ""
    mutation_reached: bool | None = None
    exception: BaseException | None = field(default=None, compare=False, repr=False)
    mode: str | None = field(default=None, compare=False, repr=False)

    def outcome(self, mode: str) -> Any:
        """The run's result, or the exception it raised, when it ran in ``mode`` (None otherwise,
        and where it has neither: a skipped run says why in words only)."""
        if self.mode != mode:
            return None
        return self.result if self.result is not None else self.exception


@dataclass
class SkippableVerdict:
    """A verdict that may be absent for a stated reason (MMA-Sim missing, no disassembler...)."""

    value: Any = None
    skipped: str | None = None


@dataclass
class SassVerdict(SkippableVerdict):
    """The SASS judge's verdict, with the SASS forms of the program's own functions
    (``oracles/sass/vocabulary.py``) where its listing was at hand: what runs count as SASS
    coverage (None: not disassembled)."""

    forms: frozenset[str] | None = None


@dataclass
class NotApplicable:
    """A judge that has nothing to say of this program by design (a ptxas release older than the
    program's ``.version`` or target): never a finding."""

    reason: str


@dataclass
class JudgeFault:
    """A judge that raised instead of answering: a finding ``<name>:fault`` (its own bug, or the
    program's effect on it), never the end of a run."""

    message: str


@dataclass(frozen=True)
class Done:
    """What ``Judge.prepare`` returns when it judged the program at once (the run holds no GPU)."""

    verdict: Any


@dataclass
class OutputVerdict:
    """What an ``OutputJudge`` computed: output buffers (name -> bytes) or the fault it raised."""

    outputs: dict[str, bytes] = field(default_factory=dict)
    fault: str | None = None


def _field(judge: str, attr: str, container: type) -> property:
    """A shorthand attribute for one field of a built-in judge's verdict (``v.predicted`` is
    ``v["checker"].predicted``): callers read and set the fields they know by name."""

    def get(self: "Verdicts") -> Any:
        verdict = self.get(judge)
        return None if verdict is None else getattr(verdict, attr)

    def set_(self: "Verdicts", value: Any) -> None:
        verdict = self.get(judge)
        if verdict is None:
            if value is None:
                return
            verdict = self[judge] = container()
        setattr(verdict, attr, value)

    return property(get, set_, doc=f"``{judge}``'s {attr}")


def _whole(judge: str) -> property:
    """A shorthand attribute for a judge whose verdict is one value (``v.ptxas`` is ``v["ptxas"]``)."""

    def get(self: "Verdicts") -> Any:
        return self.get(judge)

    def set_(self: "Verdicts", value: Any) -> None:
        if value is None:
            self.pop(judge, None)
        else:
            self[judge] = value

    return property(get, set_, doc=f"``{judge}``'s verdict")


class Verdicts(MutableMapping):
    """What each judge said of one program: judge name -> verdict (absent: that judge did not
    run), and the seconds each spent.  The built-in judges' verdicts also read as attributes
    (``v.ptxas``, ``v.reference``, ``v.checker`` the checker's findings, ``v.predicted``...)."""

    def __init__(self, verdicts: dict[str, Any] | None = None, seconds: dict[str, float] | None = None,
                 **fields: Any):
        """``fields``: the built-in judges' shorthand attributes (``Verdicts(reference=..., checker=[])``)."""
        self._v: dict[str, Any] = dict(verdicts or {})
        self.seconds: dict[str, float] = dict(seconds or {})
        self.release: str | None = None  # the ptxas release that judged as "ptxas" (None: the pinned one)
        for name, value in fields.items():
            if not isinstance(getattr(type(self), name, None), property):
                raise TypeError(f"Verdicts has no field {name!r}")
            setattr(self, name, value)

    def __getitem__(self, name: str) -> Any:
        return self._v[name]

    def __setitem__(self, name: str, verdict: Any) -> None:
        self._v[name] = verdict

    def __delitem__(self, name: str) -> None:
        del self._v[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._v)

    def __len__(self) -> int:
        return len(self._v)

    def __repr__(self) -> str:
        return f"Verdicts({self._v!r})"

    def copy(self) -> "Verdicts":
        out = Verdicts(self._v, self.seconds)
        out.release = self.release
        return out

    def replace(self, **verdicts: Any) -> "Verdicts":
        """A copy with these judges' verdicts replaced (None: as if that judge had not run)."""
        out = self.copy()
        for name, verdict in verdicts.items():
            if verdict is None:
                out.pop(name, None)
            else:
                out[name] = verdict
        return out

    ptxas = _whole("ptxas")
    hardware = _whole("hardware")
    metamorphic = _whole("metamorphic")
    checker = _field("checker", "findings", CheckerVerdict)
    predicted = _field("checker", "predicted", CheckerVerdict)
    checker_error = _field("checker", "error", CheckerVerdict)
    reference = _field("reference", "result", ReferenceVerdict)
    reference_error = _field("reference", "error", ReferenceVerdict)
    reference_skipped = _field("reference", "skipped", ReferenceVerdict)
    reference_error_kind = _field("reference", "error_kind", ReferenceVerdict)
    mutation_reached = _field("reference", "mutation_reached", ReferenceVerdict)
    mmasim = _field("mmasim", "value", SkippableVerdict)
    mmasim_skipped = _field("mmasim", "skipped", SkippableVerdict)
    sass = _field("sass", "value", SkippableVerdict)
    sass_skipped = _field("sass", "skipped", SkippableVerdict)

    def summary(self) -> dict[str, str]:
        """One line per judge for verdict tables and repro EXPECT lines."""
        out: dict[str, str] = {}
        for judge in summary_order(self):
            out.update(judge.summary(self[judge.name]))
        return out

    def record_fields(self) -> dict[str, Any]:
        """Fields of the program's record the judges add beside the verdict table (``Judge.record_fields``)."""
        out: dict[str, Any] = {}
        for judge in summary_order(self):
            out.update(judge.record_fields(self[judge.name]))
        return out


# The engine's stages, in the order a block goes through them (``fuzzptx.engine.stages`` keeps the
# table of what each does); a judge joins one of the judging ones (``Judge.stage``).
GENERATE, EMIT, COMPILE, EARLY, WARM, BATCH, PROGRAM, GPU, METAMORPHIC, COMPARE, RECORD = (
    "generate", "emit", "compile", "early", "warm", "batch", "program", "gpu", "metamorphic", "compare", "record")
STAGES = (GENERATE, EMIT, COMPILE, EARLY, WARM, BATCH, PROGRAM, GPU, METAMORPHIC, COMPARE, RECORD)
#: the stages that run beside a GPU worker (in a GPU thread of the main process), not in the CPU pool
GPU_STAGES = (GPU, METAMORPHIC)

# What a judge may need (``Judge.needs``).
IR = "ir"  # the parsed program (without it: the PTX text alone, so a batch skips the parse)
ACCEPTED = "accepted"  # only programs the compiler accepts (what it says of a rejected one is moot)
CUBIN = "cubin"  # the compiler's cubin of the program (the compile stage then keeps it)
DEVICE = "gpu"  # a GPU: without one the judge cannot run at all


@dataclass(frozen=True)
class Context:
    """What a judge may read besides the program: its PTX text (the exact text ptxas compiles and
    every line number counts in), the verdicts of the judges that ran before it, the reference's
    numerics mode, and a GPU worker when the run holds one."""

    text: str
    verdicts: Verdicts
    numerics: str = "spec"
    gpu: Any = None
    judges: tuple[str, ...] = ()
    toolchain: Toolchain | None = None  # the ptxas release the compile stage runs (None: the pinned one)

    def has_gpu(self) -> bool:
        """Whether the run holds a GPU: a worker, or a judge of the run that needs one."""
        return self.gpu is not None or any(DEVICE in get_judge(n).needs for n in self.judges)


class Judge(ABC):
    """One judge.  Subclasses set ``name`` and implement ``judge``; ``stage`` and ``needs`` tell the
    engine where and when it runs (never its name)."""

    name: ClassVar[str]
    #: the engine stage it joins: COMPILE (its verdict is the compiler's result, taken for a whole
    #: block by ``judge_batch``, cubins included), EARLY (reads the program alone: may run while the
    #: block compiles), BATCH (``judge_batch`` after the compile, a whole block in one call),
    #: PROGRAM (one program at a time after the compile), GPU (``prepare`` in the pool, ``on_gpu``
    #: beside a GPU worker), METAMORPHIC (as GPU, after it; without a GPU ``prepare`` judges at once)
    stage: ClassVar[str] = PROGRAM
    #: what it needs: IR, ACCEPTED, CUBIN, DEVICE
    needs: ClassVar[frozenset[str]] = frozenset({IR})
    #: the other judges whose verdicts it reads, run first when both are asked for
    after: ClassVar[tuple[str, ...]] = ()
    #: the keys ``summary`` writes (a checker verdict has two lines: checker and ptxas-model)
    summary_keys: ClassVar[tuple[str, ...]] = ()

    @property
    def in_pool(self) -> bool:
        """Whether it judges in the CPU pool (not on a GPU stage)."""
        return self.stage not in GPU_STAGES

    @abstractmethod
    def judge(self, program: Program, ctx: Context) -> Any:
        """This judge's verdict on ``program``.  An exception here is the judge's fault, reported
        as a finding ``<name>:crash``; it never loses the other judges' verdicts."""

    def summary(self, verdict: Any) -> dict[str, str]:
        """Lines of the verdict table (key -> text); the key is usually the judge's name."""
        return {self.name: str(verdict)}

    def record_fields(self, verdict: Any) -> dict[str, Any]:
        """Fields this judge adds to the program's record (``results.jsonl``) that are no verdict
        line: data for a run's counts, never an EXPECT line of a repro."""
        return {}

    def findings(self, program: Program, v: Verdicts, family: str, *, full: Any = None) -> list[Finding]:
        """The disagreements this judge reports (against the reference, ptxas, its own label...).
        ``full``: a callable giving the program with its bodies, where ``program`` is a campaign's
        light copy (header and launched kernel's signature only)."""
        return []

    def rows(self, program: Program, verdict: Any, v: Verdicts) -> list[tuple[str, str, str]]:
        """Rows of ``fuzzptx replay``'s table: (judge, verdict, details)."""
        return [(key, text, "") for key, text in self.summary(verdict).items()]

    def moved(self, verdict: Any, delta: int) -> Any:
        """The verdict for the same body ``delta`` lines further down the file, or None when it must
        be taken again (used to write a repro's EXPECT lines without judging twice)."""
        return None

    def replay(self, program: Program, v: Verdicts, *, gpu: bool) -> list[tuple[str, str, str]] | None:
        """``fuzzptx replay``'s rows for a judge that replays a file otherwise than by judging it
        once (its verdict put into ``v``); None: judged like any other.  ``gpu``: the GPU may be used."""
        return None

    def available(self) -> str | None:
        """None when this judge can run here, else why not (a missing GPU, tool or package)."""
        return None

    def foresees_rejection(self, verdict: Any) -> bool:
        """Whether ``verdict`` (this judge's, taken beside the compile) says the compiler will most
        likely reject the program: the engine then leaves the judges that need its acceptance
        (``ACCEPTED``) until the compiler has spoken, instead of running them beside it on a
        program whose verdicts they would then be dropped from."""
        return False

    def warm(self, results: list[Any], toolchain: Toolchain | None = None) -> None:
        """Called once per block with the compile stage's results (cubins included) before the
        per-program verdicts: a judge whose tool costs most at start-up (the SASS judge's
        disassembler) runs it once for the whole block here."""

    @property
    def warms(self) -> bool:
        """Whether it has once-per-block work (``warm``), which one call can do for several blocks."""
        return type(self).warm is not Judge.warm

    def judge_batch(self, programs: list[Program], texts: list[str], *, cubins: bool = False,
                    toolchain: Toolchain | None = None) -> list[Any]:
        """Verdicts for a whole block in one call (COMPILE and BATCH stages); ``cubins``: keep the
        cubins (a judge of the run reads them); ``toolchain``: the ptxas release the compile stage
        runs (a release matrix; given only where one is asked for)."""
        raise NotImplementedError(f"judge {self.name} has no batch form")

    def light(self, verdict: Any) -> Any:
        """The verdict as it travels between processes (a compile result without its cubin)."""
        return verdict

    def accepted(self, verdict: Any) -> bool | None:
        """Whether this judge's verdict says its compiler accepted the program (a run's summary
        counts them, per judge: per ptxas release); None: no compiler's verdict (a judge that is
        no compiler, or a release that cannot read the program)."""
        return None

    def prepare(self, program: Program, text: str, compiled: Any, *, gpu: bool,
                verdicts: Verdicts | None = None) -> Any:
        """GPU and METAMORPHIC stages, in the pool: what ``on_gpu`` needs for this program (None:
        nothing to run).  ``compiled``: the compile stage's result; ``gpu`` False: the run holds
        no GPU -- a judge that can do without one returns its verdict (``Done``) here;
        ``verdicts``: what the pool's judges said of the program (a judge reuses what it would
        otherwise compute again)."""
        return None

    def prepare_block(self, prepared: list[Any]) -> None:
        """GPU and METAMORPHIC stages, in the pool, after ``prepare`` of every program of a block:
        work done once for the block's ``prepare`` results (batched compiles)."""

    def on_gpu(self, program: Program, prepared: Any, worker: Any) -> Any:
        """GPU and METAMORPHIC stages, beside the run's GPU worker: the verdict from ``prepared``."""
        raise NotImplementedError(f"judge {self.name} has no GPU stage")


class OutputJudge(Judge):
    """A judge that computes the program's output buffers, compared with the reference's as the
    GPU's are.  Implement ``run(program, inputs)``: ``inputs`` maps every buffer's name to a numpy
    array filled exactly as for the GPU launch (the header's init and seed); return a mapping
    from each output buffer's name to an array of its final contents.  Its disagreements are
    bucketed as ``<name>!=reference|mismatch|<family>``; an exception is ``<name>:fault|<family>``."""

    needs: ClassVar[frozenset[str]] = frozenset({IR, ACCEPTED})  # as the GPU: only programs turned into a kernel
    after: ClassVar[tuple[str, ...]] = ("ptxas", "reference")

    @abstractmethod
    def run(self, program: Program, inputs: dict[str, Any]) -> dict[str, Any]:
        """Output buffer name -> numpy array of its final contents."""

    def judge(self, program: Program, ctx: Context) -> OutputVerdict:
        inputs = {b.name: buffer_bytes(b).view(numpy_dtype(b.type)).copy() for b in program.buffers}
        try:
            outs = self.run(program, inputs)
        except Exception as exc:  # noqa: BLE001 - the judge's own failure is its verdict
            return OutputVerdict(fault=f"{type(exc).__name__}: {exc}")
        got: dict[str, bytes] = {}
        for b in program.buffers:
            if b.output and b.name in outs:
                got[b.name] = np.ascontiguousarray(outs[b.name]).tobytes()
        return OutputVerdict(outputs=got)

    def summary(self, verdict: OutputVerdict) -> dict[str, str]:
        return {self.name: f"fault: {verdict.fault}" if verdict.fault else "ran"}

    def findings(self, program: Program, v: Verdicts, family: str, *, full: Any = None) -> list[Finding]:
        verdict = v.get(self.name)
        if verdict is None:
            return []
        if verdict.fault:
            return [Finding(f"{self.name}:fault|{family}", f"{self.name} failed: {verdict.fault}")]
        if v.reference is None or not expects_defined(program):
            return []
        return outputs_against_reference(program, v.reference, verdict.outputs, f"{self.name}!=reference", family)


def judge_names(judges: Sequence[Judge]) -> tuple[str, ...]:
    return tuple(j.name for j in judges)
