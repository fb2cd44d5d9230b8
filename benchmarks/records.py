"""How a benchmark script ends: its JSON record printed and, with ``--out``, written (one format
for every record under benchmarks/results/ and tests/hw_records/)."""
from __future__ import annotations

import json
from pathlib import Path


def finish(record: dict, out: str | None, *, echo: bool = True) -> None:
    """Print ``record`` (unless ``echo`` is off) and write it to ``out`` when given."""
    text = json.dumps(record, indent=1) + "\n"
    if echo:
        print(text, end="")
    if out:
        Path(out).write_text(text)
