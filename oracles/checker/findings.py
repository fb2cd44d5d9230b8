"""What the checker reports: one ``Finding`` per rule violation, with a stable rule id and a line."""
from __future__ import annotations

from dataclasses import dataclass, field

LAYERS = ("isa", "spec", "ptxas-model")
SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One diagnosis.

    ``rule`` is a stable id (``isa.wgmma.shape``, ``spec.fence.missing``, ``ptxas.C7519``);
    ``line`` the PTX line it is about (the instruction's ``loc``), ``kernel`` the function.
    """

    path: str | None
    line: int | None
    rule: str
    severity: str
    layer: str
    message: str
    kernel: str | None

    def text(self) -> str:
        """``path:line: severity: [rule] message`` (the CLI's text format)."""
        where = ":".join(str(p) for p in (self.path, self.line) if p is not None)
        return f"{where}: {self.severity}: [{self.rule}] {self.message}" if where else \
            f"{self.severity}: [{self.rule}] {self.message}"

    def as_json(self) -> dict:
        return {"path": self.path, "line": self.line, "rule": self.rule, "severity": self.severity,
                "layer": self.layer, "message": self.message, "kernel": self.kernel}


@dataclass
class Sink:
    """Collects findings for one function, dropping exact repeats (fixed-point re-runs report twice)."""

    path: str | None
    kernel: str | None
    layer: str
    items: list[Finding] = field(default_factory=list)
    _seen: set = field(default_factory=set)

    def add(self, rule: str, severity: str, line: int | None, message: str) -> None:
        key = (rule, line, message)
        if key in self._seen:
            return
        self._seen.add(key)
        self.items.append(Finding(self.path, line, rule, severity, self.layer, message, self.kernel))


def line_of(node) -> int | None:
    loc = getattr(node, "loc", None)
    return loc.line if loc is not None else None


def path_of(module) -> str | None:
    """The file a module came from (the loc of its first located item), if known."""
    for item in module.items:
        loc = getattr(item, "loc", None)
        if loc is not None:
            return loc.file
    return None


@dataclass(frozen=True)
class PredictedDiag:
    code: str | None
    line: int | None
    severity: str  # "error" | "info"
    kernel: str | None
    message: str


@dataclass(frozen=True)
class PredictedDiagnostics:
    """What the ptxas model predicts: ``diagnostics`` exactly; ``may``: codes that depend on ptxas's
    register allocator, which ptxas may or may not print (``ptxas_pressure.allocator_may``) -- never
    a disagreement either way."""

    accepted: bool
    diagnostics: tuple[PredictedDiag, ...]
    may: tuple[str, ...] = ()

    def pairs(self) -> tuple[tuple[str | None, int | None], ...]:
        """(code, line) of each diagnostic; errors have code None."""
        return tuple((d.code, d.line) for d in self.diagnostics)
