"""Handlers the interpreter consults before its own table, so a caller can route instructions
elsewhere for a while (``warp_exec.install``) without the handler modules importing ``control``."""
from __future__ import annotations

from typing import Callable

# Each hook maps an instruction to a handler, or None to pass it on; the first non-None wins.
FIRST: list[Callable] = []
