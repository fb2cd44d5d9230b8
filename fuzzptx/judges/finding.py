"""A finding: one disagreement between judges, named by its root cause so that runs and shards
bucket it together, and classed by what it means to the user.

A finding has two names.  Its ``signature`` (``<pair>|<what>|<family>``, ``sass:inflight-write|wgmma.f32.f16``)
is the *evidence*: what the judges said, readable, and what a repro keeps while it shrinks.  Its
``root_cause`` (``RootCause``) is its *identity*: the judge pair and rule that name the cause, the
SASS or PTX pattern behind it, and the instruction class -- never the type mix or the shape,
which are attributes of the bucket.  Findings of one program that share a cause are one finding
(``merge``) with the others as further evidence (``Finding.also``): a GPU fault in SASS with an
in-flight register hazard, and that hazard read and written, are one bug, not three.

``cause_of`` is the one place that reads a signature: records written before causes were
recorded triage through it too.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterable, Mapping

COMPILER = "compiler bug candidate"
HARDWARE = "hardware or spec deviation"
MODEL = "model gap (ours)"
CLASSES = (COMPILER, HARDWARE, MODEL)

#: What a finding means, by the start of its signature (``<pair>|<what>|<family>``); the first
#: rule that matches wins.  One table: the run's summary, the repro policy (model gaps are not
#: shrunk unless asked) and the reports read it.
CLASS_RULES: tuple[tuple[str, str], ...] = (
    (r"checker!=ptxas\|", MODEL),  # the checker's model of ptxas against ptxas
    (r"expect!=", MODEL),  # a mutation's label against a judge: the label is ours
    (r"(reference|checker|differ):(error|crash)", MODEL),  # our judges could not judge a legal program
    (r"mmasim!=", MODEL),  # one numerics model against another
    (r"reference:[\w-]+!=[\w-]+\|", MODEL),  # metamorphic pairs on the reference: it disagrees with itself
    (r"[\w-]+:pipelined!=planted\|", MODEL),  # the planted self-test of the metamorphic judge
    (r"ptxas(@[\w.+/-]+)?:", COMPILER),  # a ptxas release timed out or crashed
    (r"ptxas(@[\w.+/-]+)?!=ptxas(@[\w.+/-]+)?\|", COMPILER),  # two ptxas releases disagree on one program
    (r"sass:", COMPILER),  # a hazard in the SASS ptxas emitted for a defined program
    (r"reference!=hardware\|mismatch-repeated-wgmma", COMPILER),  # ptxas -O3's collapse of repeated wgmmas
    (r"reference!=hardware\|mismatch-after-sass-hazard", COMPILER),  # the GPU ran SASS with a hazard in it
    (r"hardware:fault-after-sass-hazard", COMPILER),  # (differ.after_sass_hazards)
    (r"hardware:(O3!=[\w.@+-]+|pipelined!=serialised|plain!=deadbranch)\|", COMPILER),  # forms that must agree on the GPU
    (r"hardware:\d+\.\d+\.\d+!=\d+\.\d+\.\d+\|", COMPILER),  # two releases' builds of one program on the GPU
    (r"hardware:nondeterministic\|", HARDWARE),
    (r"reference!=hardware\|", HARDWARE),  # the GPU against what the PTX ISA allows
    (r"hardware:fault", HARDWARE),  # the GPU faulted on a program the spec defines
    (r"[\w.-]+!=reference\|", HARDWARE),  # another simulator or GPU (a plugin) against the PTX ISA
    (r"[\w.-]+:fault\|", MODEL),  # a plugin judge that raised
)


@lru_cache(maxsize=4096)
def classify(signature: str) -> str:
    """The class of a finding signature (``CLASSES``); an unknown pair is a model gap until a rule
    says otherwise."""
    for pattern, cls in CLASS_RULES:
        if re.match(pattern, signature):
            return cls
    return MODEL


#: The patterns a root cause can name: key -> what it is, in words (reports print the words).
PATTERNS: dict[str, str] = {
    "inflight-register": "a register of a GMMA in flight written or read by another instruction",
    "gmma-missing": "a GMMA that must execute is missing on a path of the SASS",
    "gmma-extra": "a path of the SASS holds more GMMAs of a shape than the kernel has wgmmas",
    "read-after-arrive": "a GMMA reads a register written after the last WARPGROUP.ARRIVE",
    "repeated-wgmma": "a wgmma issued again right after an identical one",
    "immediate-descriptor": "a wgmma whose matrix descriptor is an immediate, not a register",
    "hardware-numerics": "outputs the bit-exact H100 numerics model gives, outside the PTX ISA's bounds",
    "bfe-s32-position-beyond-31": "a bfe.s32 with a constant start position of 32 or more",
    "bfi-length-beyond-31": "a bfi.b32 with a constant length of 32 or more",
    "abs-into-saturating-cvt": "a saturating narrowing cvt of an abs.s32/abs.s64 result",
    "neg-into-saturating-cvt": "a saturating narrowing cvt of a neg.s32 result, or a slct testing one",
    "neg-into-saturating-add": "an add.sat/sub.sat.s32 of a neg.s32 result",
    "clz-into-saturating-add": "an add.sat.s32 of a clz.b32 result",
    "prmt-sign-into-byte-mask": "a sign-replicating prmt.b32 whose result is masked to its low bytes",
    "mulhi-into-wide-sub": "a 64-bit sub whose minuend's low word is a mul.hi result",
    "unsigned-max-into-signed-min": "a max.u32 result read by a signed min, max or compare",
    "mulhi-accumulated": "an add accumulating a mul.hi result into one of its sources (a loop's running sum)",
    "accumulator-sign-flips-around-sync": "two sign flips of a wgmma accumulator with a warp-synchronous or barrier instruction (an empty commit group, shfl.sync, bar.sync, ...) between",
    "abs-assumed-nonnegative": "an abs.s32 result read by a signed rem or a signed compare",
    "lop3-repeated-operand": "a lop3.b32 with one register in two of its source slots",
    "set-compared-with-one": "an integer set result (all ones or 0) compared with 1 by setp.eq/ne",
}


@dataclass(frozen=True, order=True)
class RootCause:
    """What a finding *is* (its bucket), as Hypothesis's ``InterestingOrigin`` is what a failure is:
    the judge or judge pair that names the cause and its rule, the SASS or PTX pattern behind it
    (a ``PATTERNS`` key; empty where no diagnosis says more than the rule), and the instruction
    class (``wgmma``, ``mma``, ``ldmatrix``...)."""

    judges: str
    rule: str
    pattern: str = ""
    instruction_class: str = ""

    def __str__(self) -> str:
        return "|".join((self.judges, self.rule, self.pattern, self.instruction_class))

    @property
    def kind(self) -> str:
        """``COMPILER``, ``HARDWARE`` or ``MODEL``: what the cause means to the user."""
        return _kind(self)

    def words(self) -> str:
        """The cause in a line: ``sass gmma-pipeline: a GMMA that must execute is missing ... (wgmma)``."""
        what = PATTERNS.get(self.pattern, self.pattern)
        return f"{self.judges} {self.rule}" + (f": {what}" if what else "") \
            + (f" ({self.instruction_class})" if self.instruction_class else "")

    def as_dict(self) -> dict[str, str]:
        return {"judges": self.judges, "rule": self.rule, "pattern": self.pattern,
                "instruction_class": self.instruction_class}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RootCause":
        return cls(str(d.get("judges", "")), str(d.get("rule", "")), str(d.get("pattern", "") or ""),
                   str(d.get("instruction_class", "") or ""))

    @classmethod
    def parse(cls, key: str) -> "RootCause":
        """The cause whose ``str`` is ``key`` (a stats.json bucket key)."""
        parts = key.split("|")
        if len(parts) != 4:
            return cause_of(key)
        return cls(*parts)


def instruction_class(family: str) -> str:
    """The instruction class of a finding family: ``wgmma.sp.f32.e4m3`` -> ``wgmma``, ``wmma.mma.f16`` -> ``wmma``."""
    return family.split(".", 1)[0] if family else ""


def _release_free(judges: str) -> str:
    """``ptxas@12.9.86!=ptxas`` -> ``ptxas@*!=ptxas``: the release is an attribute, not the cause."""
    return re.sub(r"@[\w.+/-]+", "@*", judges)


def evidence_of(signature: str) -> tuple[str, str, str, str]:
    """(judges, rule, detail, family) read off a signature: ``J!=K|what|fam``, ``J:rule|fam``,
    ``J:rule:detail|fam``, ``J:A!=B|what|fam`` (a metamorphic pair), ``J:nondeterministic|side|fam``."""
    parts = signature.split("|")
    family = parts[-1] if len(parts) >= 2 else ""
    head, middle = parts[0], parts[1:-1]
    judge, colon, rest = head.partition(":")
    if not colon or "!=" in rest:  # a pair (``checker!=ptxas``, ``hardware:O3!=O0``) or a plain name
        return _release_free(head), (middle[0] if middle else ""), "|".join(middle[1:]), family
    rule, _, detail = rest.partition(":")
    extra = "|".join(middle)
    return _release_free(judge), rule, ":".join(x for x in (detail, extra) if x), family


@dataclass(frozen=True)
class _CauseRule:
    """Evidence ``judges`` + a rule among ``rules`` names the cause ``(cause_judges, cause_rule,
    pattern)``; ``follows_hazard``: the evidence is what the GPU did with SASS that has a pipeline
    hazard, so in a program with such a hazard it is that hazard's cause."""

    judges: str
    rules: tuple[str, ...]
    cause: tuple[str, str, str]
    follows_hazard: bool = False


#: Evidence that names a cause other than its own pair and rule; everything else is its own cause
#: (``judges``, ``rule``, no pattern).  One table: ``cause_of`` and ``program_causes`` read it.
CAUSE_RULES: tuple[_CauseRule, ...] = (
    _CauseRule("sass", ("inflight-write", "inflight-read"), ("sass", "gmma-pipeline", "inflight-register")),
    _CauseRule("sass", ("gmma-dropped",), ("sass", "gmma-pipeline", "gmma-missing")),
    _CauseRule("sass", ("gmma-duplicated",), ("sass", "gmma-pipeline", "gmma-extra")),
    _CauseRule("sass", ("read-after-arrive",), ("sass", "gmma-pipeline", "read-after-arrive")),
    # the reference with the repeats dropped gives the GPU's outputs: the SASS lost a GMMA
    # (where ptxas keeps every copy the H100 computes right: benchmarks/results/repeat_probe_h100.json)
    _CauseRule("reference!=hardware", ("mismatch-repeated-wgmma",), ("sass", "gmma-pipeline", "gmma-missing")),
    _CauseRule("reference!=hardware", ("mismatch-hardware-numerics",),
               ("reference!=hardware", "mismatch", "hardware-numerics")),
    _CauseRule("reference!=hardware", ("mismatch-after-sass-hazard",), ("sass", "gmma-pipeline", ""), True),
    _CauseRule("hardware", ("fault-after-sass-hazard",), ("sass", "gmma-pipeline", ""), True),
)
_BY_EVIDENCE = {(r.judges, rule): r for r in CAUSE_RULES for rule in r.rules}
_HAZARD_CAUSES = frozenset(r.cause for r in CAUSE_RULES if not r.follows_hazard and r.cause[0] == "sass")


@lru_cache(maxsize=8192)
def cause_of(signature: str, pattern: str = "") -> RootCause:
    """The root cause a signature names by itself (``pattern``: a diagnosis of the program that says
    more, e.g. ``immediate-descriptor`` for a ptxas crash).  A GPU consequence of a SASS hazard
    names the hazard's rule without its pattern here; ``program_causes`` joins it to the hazard
    its program has."""
    judges, rule, _detail, family = evidence_of(signature)
    cls = instruction_class(family)
    r = _BY_EVIDENCE.get((judges, rule))
    if r is not None:
        return RootCause(r.cause[0], r.cause[1], pattern or r.cause[2], cls)
    if judges == "hardware" and rule == "fault":  # the fault's kind says what happened: part of the rule
        rule = f"fault:{_detail.split('|', 1)[0]}" if _detail else rule
    return RootCause(judges, rule, pattern, cls)


#: Evidence of the GPU running ptxas's -O3 build against another build of the same program (a
#: compile pair, ``hardware:O3!=O0|mismatch|...``): in a program whose -O3 SASS has a pipeline
#: hazard, the hazard is its cause (the repeated-wgmma kernels of tests/data/pairs).
_O3_PAIR = re.compile(r"hardware:O3!=[\w.@+-]+")
_RELEASE_PAIR = re.compile(r"hardware:\d+\.\d+\.\d+!=\d+\.\d+\.\d+")


def follows_hazard(signature: str) -> bool:
    """The evidence is the GPU running SASS with a pipeline hazard (``differ.after_sass_hazards``),
    or a compile pair of its -O3 build: in a program with a hazard it is that hazard's."""
    judges, rule, _, _ = evidence_of(signature)
    r = _BY_EVIDENCE.get((judges, rule))
    return (r is not None and r.follows_hazard) or bool(_O3_PAIR.fullmatch(judges))


def program_causes(signatures: Iterable[str], given: Iterable["RootCause | None"] | None = None) -> list[RootCause]:
    """The cause of each finding of *one program*: as ``cause_of`` (or as ``given``, where a judge
    or a diagnosis named it), except that a GPU consequence of a SASS hazard takes the cause of the
    program's first hazard."""
    sigs = list(signatures)
    causes = [g if g is not None else cause_of(s) for s, g in zip(sigs, given if given is not None else [None] * len(sigs))]
    hazard = next((c for s, c in zip(sigs, causes) if not follows_hazard(s)
                   and (c.judges, c.rule, c.pattern) in _HAZARD_CAUSES), None)
    if hazard is not None:
        return [hazard if follows_hazard(s) else c for s, c in zip(sigs, causes)]
    return _after_o3_pair(causes)


def _after_o3_pair(causes: list[RootCause]) -> list[RootCause]:
    """In a program whose -O3 build disagrees with another build of the same release on the GPU
    (``hardware:O3!=O0|mismatch``, diagnosed by its shape), the GPU's disagreement with the
    reference and another release's disagreement with the pinned -O3 are that miscompile's
    evidence: they take its cause (one program, one bug, counted once)."""
    o3 = next((c for c in causes if c.rule == "mismatch" and _O3_PAIR.fullmatch(c.judges)), None)
    if o3 is None:
        return causes
    return [o3 if c.rule == "mismatch" and (c.judges == "reference!=hardware" or _RELEASE_PAIR.fullmatch(c.judges))
            else c for c in causes]


_KIND_OF_CAUSE = {("sass", "gmma-pipeline"): COMPILER}


def _kind(cause: RootCause) -> str:
    k = _KIND_OF_CAUSE.get((cause.judges, cause.rule))
    if k is not None:
        return k
    judges = cause.judges.replace("@*", "@R")
    if "!=" in judges or ":" in judges and "!=" in judges:
        return classify(f"{judges}|{cause.rule}|{cause.instruction_class}")
    return classify(f"{judges}:{cause.rule}|{cause.instruction_class}")


@dataclass(frozen=True)
class Finding:
    """A disagreement: its ``signature`` ``<pair>|<what>|<family>`` (``checker!=ptxas|C7519|wgmma``,
    the evidence, readable), its message and details (``evidence``), its root cause (``cause``;
    None: what the signature names, ``cause_of``) and the other findings of the same program that
    share that cause (``also``: further evidence, one finding for one bug)."""

    signature: str
    message: str
    evidence: tuple[tuple[str, Any], ...] = ()
    cause: RootCause | None = None
    also: tuple["Finding", ...] = field(default=())

    @property
    def pair(self) -> str:
        return self.signature.split("|", 1)[0]

    @property
    def root_cause(self) -> RootCause:
        return self.cause if self.cause is not None else cause_of(self.signature)

    @property
    def signatures(self) -> tuple[str, ...]:
        """Every piece of evidence: this finding's signature, then those it merged."""
        return (self.signature,) + tuple(f.signature for f in self.also)

    @property
    def kind(self) -> str:
        """What it means to the user: ``COMPILER``, ``HARDWARE`` or ``MODEL``, by its root cause."""
        return self.root_cause.kind


def merge(findings: Iterable[Finding]) -> list[Finding]:
    """The findings of one program, one per root cause (``program_causes``): the first finding that
    is not a GPU consequence of a hazard leads (its signature is the one a repro keeps while it
    shrinks: the SASS hazard, judged without a GPU), the rest are its ``also``."""
    fs = list(findings)
    if not fs:
        return []
    causes = program_causes([f.signature for f in fs], [f.cause for f in fs])
    groups: dict[RootCause, list[Finding]] = {}
    for f, c in zip(fs, causes):
        groups.setdefault(c, []).append(f)
    out = []
    for c, group in groups.items():
        # the finding whose own cause this is leads (a hazard, a compile pair): its signature
        # needs the fewest judges to hold while a repro shrinks
        lead = next((f for f in group if (f.cause or cause_of(f.signature)) == c), None) \
            or next((f for f in group if not follows_hazard(f.signature)), group[0])
        rest = tuple(x for f in group if f is not lead for x in (_bare(f),) + f.also)
        out.append(Finding(lead.signature, lead.message, lead.evidence, c, lead.also + rest))
    return out


def _bare(f: Finding) -> Finding:
    return Finding(f.signature, f.message, f.evidence, f.cause)
