"""A finding: one disagreement between judges, named so that runs and shards bucket it together."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Finding:
    """A disagreement with a stable ``signature`` ``<pair>|<what>|<family>`` (``checker!=ptxas|C7519|wgmma``)
    so that findings of many runs and shards bucket together, plus its evidence."""

    signature: str
    message: str
    evidence: tuple[tuple[str, Any], ...] = ()

    @property
    def pair(self) -> str:
        return self.signature.split("|", 1)[0]
