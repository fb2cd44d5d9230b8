"""What a reduction pass is: a name and a generator of smaller candidates (the driver judges them)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from fuzzptx.program import Program


@dataclass(frozen=True)
class Pass(ABC):
    """One reduction pass. ``candidates`` lists programs the pass would make of ``program``, in the
    order the driver tries them (it keeps the first that holds and asks again from there)."""

    name: ClassVar[str]

    @abstractmethod
    def candidates(self, program: Program) -> list[Program]:
        """Smaller variants of ``program`` (by the driver's size order); none where the pass has nothing to do."""
